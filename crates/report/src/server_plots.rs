//! Plots of the server-side samples the lab's /proc sampler takes during a run
//! (`RunResult.server`): per-CPU busy share (seed 003: FreeBSD piled Apache onto one CPU,
//! which only per-CPU sampling shows), the server's own CPU, run queue, memory, processes,
//! context switches, file descriptors and the TCP counters (listen overflows, seed 004).

use crate::svg::Series;
use webtune_model::server::{ServerSample, ServerSamples};

/// One plot: an id suffix, title, y label, its lines and a caption.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPlot {
    pub id: &'static str,
    pub title: &'static str,
    pub y_label: &'static str,
    pub series: Vec<Series>,
    pub caption: &'static str,
}

fn per_second(count: f64, s: &ServerSample) -> f64 {
    if s.length_s > 0.0 {
        count / s.length_s
    } else {
        0.0
    }
}

/// The samples a per-second rate is drawn from: all but a last one shorter than half the
/// sampling period (the stop cut it short).
fn rate_samples(samples: &[ServerSample], interval_ms: u64) -> Vec<ServerSample> {
    let nominal = interval_ms as f64 / 1000.0;
    let mut out = samples.to_vec();
    if out.len() > 1 && out.last().is_some_and(|s| s.length_s < nominal / 2.0) {
        out.pop();
    }
    out
}

fn line(
    samples: &[ServerSample],
    name: &str,
    index: usize,
    value: impl Fn(&ServerSample) -> f64,
) -> Series {
    Series::new(
        name,
        samples.iter().map(|s| (s.t_s, value(s))).collect(),
        index,
    )
}

/// The plots of a run's server samples; empty when nothing was sampled.
pub fn server_plots(server: &ServerSamples) -> Vec<ServerPlot> {
    let samples = &server.samples;
    if samples.is_empty() {
        return Vec::new();
    }
    let cpus = samples.iter().map(|s| s.cpus.len()).max().unwrap_or(0);
    let mut cpu_lines: Vec<Series> = (0..cpus)
        .map(|c| {
            line(samples, &format!("cpu{c}"), c, |s| {
                s.cpus.get(c).map(|share| share.busy()).unwrap_or(0.0)
            })
        })
        .collect();
    let any_steal = samples.iter().any(|s| s.cpus.iter().any(|c| c.steal > 0.0));
    if any_steal {
        cpu_lines.push(line(samples, "steal (mean)", cpus, |s| {
            if s.cpus.is_empty() {
                0.0
            } else {
                s.cpus.iter().map(|c| c.steal).sum::<f64>() / s.cpus.len() as f64
            }
        }));
    }
    let mib = |kib: u64| kib as f64 / 1024.0;
    // Rates leave out a last sample cut short by the stop: a few milliseconds make one event
    // a rate of hundreds a second (issue 39).
    let rated = rate_samples(samples, server.interval_ms);
    let samples_for_rates = rated.as_slice();
    vec![
        ServerPlot {
            id: "cpu",
            title: "Host CPUs: busy share",
            y_label: "busy (%)",
            series: cpu_lines,
            caption: "Share of each interval every CPU was busy (user, system, irq, softirq; \
                      iowait counts as idle), and the time the hypervisor gave to others \
                      (steal). One CPU far busier than the rest is a scheduling imbalance.",
        },
        ServerPlot {
            id: "process-cpu",
            title: "Server processes: CPU used",
            y_label: "cores",
            series: vec![
                line(samples_for_rates, "user", 0, |s| {
                    per_second(s.cpu_user_s, s)
                }),
                line(samples_for_rates, "system", 1, |s| {
                    per_second(s.cpu_system_s, s)
                }),
            ],
            caption: "CPU seconds per second used by the server's processes (1 = one core).",
        },
        ServerPlot {
            id: "run-queue",
            title: "Host run queue",
            y_label: "tasks",
            series: vec![
                line(samples, "runnable", 0, |s| s.run_queue as f64),
                line(samples, "blocked on I/O", 1, |s| s.blocked as f64),
            ],
            caption: "Runnable tasks and tasks blocked on I/O at each sample.",
        },
        ServerPlot {
            id: "memory",
            title: "Server processes: memory",
            y_label: "MiB",
            series: vec![
                line(samples, "RSS", 0, |s| mib(s.rss_kib)),
                line(samples, "PSS", 1, |s| mib(s.pss_kib)),
            ],
            caption: "Resident and proportional set size of the server's processes, summed over \
                      them (RAM divided by the RSS of one process bounds how many fit).",
        },
        ServerPlot {
            id: "processes",
            title: "Server processes and threads",
            y_label: "count",
            series: vec![
                line(samples, "processes", 0, |s| s.processes as f64),
                line(samples, "threads", 1, |s| s.threads as f64),
            ],
            caption: "Processes and threads of the server at each sample.",
        },
        ServerPlot {
            id: "context-switches",
            title: "Server context switches",
            y_label: "per second",
            series: vec![
                line(samples_for_rates, "voluntary", 0, |s| {
                    per_second(s.voluntary_ctxt_switches as f64, s)
                }),
                line(samples_for_rates, "involuntary", 1, |s| {
                    per_second(s.involuntary_ctxt_switches as f64, s)
                }),
            ],
            caption: "Voluntary (waiting) and involuntary (preempted) context switches of the \
                      server's threads per second.",
        },
        ServerPlot {
            id: "descriptors",
            title: "File descriptors and TIME_WAIT sockets",
            y_label: "count",
            series: vec![
                line(samples, "open fds (server)", 0, |s| s.open_fds as f64),
                line(samples, "TIME_WAIT (host)", 1, |s| s.time_wait as f64),
            ],
            caption: "Open file descriptors of the server's processes and the host's sockets in \
                      TIME_WAIT.",
        },
        ServerPlot {
            id: "tcp",
            title: "Host TCP trouble",
            y_label: "per second",
            series: vec![
                line(samples_for_rates, "listen overflows", 0, |s| {
                    per_second(s.listen_overflows as f64, s)
                }),
                line(samples_for_rates, "listen drops", 1, |s| {
                    per_second(s.listen_drops as f64, s)
                }),
                line(samples_for_rates, "retransmits", 2, |s| {
                    per_second(s.tcp_retrans_segs as f64, s)
                }),
            ],
            caption: "Connections dropped because a listen queue was full (a longer backlog and \
                      net.core.somaxconn help) and TCP segments retransmitted, per second, \
                      host-wide.",
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::server::CpuShare;

    fn sample(t_s: f64, idle: [f64; 2]) -> ServerSample {
        ServerSample {
            t_s,
            length_s: 0.5,
            cpus: idle
                .iter()
                .map(|&i| CpuShare {
                    idle: i,
                    user: 100.0 - i,
                    ..CpuShare::default()
                })
                .collect(),
            cpu_user_s: 0.25,
            rss_kib: 2048,
            listen_overflows: 5,
            ..ServerSample::default()
        }
    }

    #[test]
    fn per_cpu_busy_and_rates_per_second() {
        let server = ServerSamples {
            interval_ms: 500,
            cpu_count: 2,
            samples: vec![sample(0.5, [90.0, 10.0]), sample(1.0, [80.0, 0.0])],
            ..ServerSamples::default()
        };
        let plots = server_plots(&server);
        let cpu = &plots[0];
        assert_eq!(cpu.series.len(), 2, "no steal line without steal");
        assert_eq!(cpu.series[0].points, vec![(0.5, 10.0), (1.0, 20.0)]);
        assert_eq!(cpu.series[1].points, vec![(0.5, 90.0), (1.0, 100.0)]);
        let process = plots.iter().find(|p| p.id == "process-cpu").unwrap();
        assert_eq!(process.series[0].points[0], (0.5, 0.5));
        let memory = plots.iter().find(|p| p.id == "memory").unwrap();
        assert_eq!(memory.series[0].points[0], (0.5, 2.0));
        let tcp = plots.iter().find(|p| p.id == "tcp").unwrap();
        assert_eq!(tcp.series[0].points[1], (1.0, 10.0));
        assert!(server_plots(&ServerSamples::default()).is_empty());
    }

    /// A last sample the stop cut to a few milliseconds is no rate (one event in 4 ms read
    /// 250/s, issue 39); gauges keep it.
    #[test]
    fn a_last_sliver_of_a_sample_is_left_out_of_the_rates() {
        let mut sliver = sample(1.004, [80.0, 0.0]);
        sliver.length_s = 0.004;
        sliver.listen_overflows = 1;
        let server = ServerSamples {
            interval_ms: 500,
            cpu_count: 2,
            samples: vec![sample(0.5, [90.0, 10.0]), sample(1.0, [80.0, 0.0]), sliver],
            ..ServerSamples::default()
        };
        let plots = server_plots(&server);
        let tcp = plots.iter().find(|p| p.id == "tcp").unwrap();
        assert_eq!(tcp.series[0].points.len(), 2, "{:?}", tcp.series[0].points);
        let memory = plots.iter().find(|p| p.id == "memory").unwrap();
        assert_eq!(memory.series[0].points.len(), 3);
    }

    #[test]
    fn captions_say_what_the_plot_shows_not_which_seed() {
        let server = ServerSamples {
            samples: vec![sample(0.5, [90.0, 10.0])],
            ..ServerSamples::default()
        };
        for plot in server_plots(&server) {
            assert!(
                !plot.caption.to_lowercase().contains("seed"),
                "{}: {}",
                plot.id,
                plot.caption
            );
        }
    }
}
