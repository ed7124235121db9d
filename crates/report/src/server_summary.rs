//! The text summary of the server-side samples, printed after the bench report: busiest
//! and idlest CPU (seed 003's scheduler piled Apache onto one CPU), context switches per
//! request (seed 000's scheduling overhead), listen-queue overflows (seed 004's
//! somaxconn), peak processes and memory; first of all, a server's main process that died.
//! Totals and peaks cover everything sampled; per-response figures the measured window only.
//! The lab samples; this renders what it sampled (`lab run`, `lab sweep`, the lab's tests).

use std::fmt::Write;
use webtune_model::ServerSamples;

/// A few lines that say what the server side did during the run. `responses` is the
/// run's count of complete responses (for per-request figures), counted over its measured
/// window: per-response figures divide only the samples' share inside that window
/// (`ServerSamples::measured`), never the warm-up's or the cool-down's CPU and switches.
pub fn summarise(samples: &ServerSamples, responses: u64) -> String {
    let mut out = String::new();
    let list = &samples.samples;
    let seconds: f64 = list.iter().map(|s| s.length_s).sum();
    let measured = samples.measured();
    // A window that covers (nearly) every sample changes nothing: the figures say it once.
    let windowed = !samples.measured.is_empty() && measured.seconds < seconds * 0.99;
    let window = if windowed {
        format!(", {:.1} s of them in the measured window", measured.seconds)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Server side ({}, sampled every {} ms: {} samples over {:.1} s{window}; {})",
        samples.target,
        samples.interval_ms,
        list.len(),
        seconds,
        samples.selector
    );
    write_deaths(&mut out, samples);
    if list.is_empty() {
        out.push_str("  no samples (the run was shorter than one interval)\n");
        return out;
    }

    // Per CPU: time-weighted mean of each state.
    let cpu_count = samples.cpu_count as usize;
    let mut busy = vec![0.0f64; cpu_count];
    let mut user = vec![0.0f64; cpu_count];
    let mut system = vec![0.0f64; cpu_count];
    let mut softirq = vec![0.0f64; cpu_count];
    let mut steal = vec![0.0f64; cpu_count];
    for s in list {
        let w = if seconds > 0.0 {
            s.length_s / seconds
        } else {
            0.0
        };
        for (i, c) in s.cpus.iter().enumerate().take(cpu_count) {
            busy[i] += c.busy() * w;
            user[i] += c.user * w;
            system[i] += c.system * w;
            softirq[i] += (c.softirq + c.irq) * w;
            steal[i] += c.steal * w;
        }
    }
    if cpu_count > 0 {
        let by_busy = |a: &usize, b: &usize| busy[*a].total_cmp(&busy[*b]);
        let busiest = (0..cpu_count).max_by(by_busy).unwrap_or(0);
        let idlest = (0..cpu_count).min_by(by_busy).unwrap_or(0);
        let describe = |i: usize| {
            format!(
                "cpu{i} {:.0}% busy (user {:.0}, sys {:.0}, irq+softirq {:.0})",
                busy[i], user[i], system[i], softirq[i]
            )
        };
        let _ = write!(out, "  CPU        busiest {}", describe(busiest));
        if cpu_count > 1 {
            let _ = write!(out, "; idlest {}", describe(idlest));
        }
        out.push('\n');
        let spread = busy[busiest] - busy[idlest];
        let mean_steal = steal.iter().sum::<f64>() / cpu_count as f64;
        // Where the host's CPU went: the server's share, and everything else (the
        // generator, the sampler, other processes) — LAB-NOTES: record other CPU per run.
        let host_busy_s: f64 = list
            .iter()
            .map(|s| s.cpus.iter().map(|c| c.busy() / 100.0).sum::<f64>() * s.length_s)
            .sum();
        let server_s: f64 = list.iter().map(|s| s.cpu_user_s + s.cpu_system_s).sum();
        let _ = write!(
            out,
            "             host busy {host_busy_s:.1} of {:.1} CPU-s: server {server_s:.1}, rest {:.1} \
             (generator, sampler, other processes); steal {mean_steal:.1}%",
            seconds * cpu_count as f64,
            (host_busy_s - server_s).max(0.0)
        );
        if cpu_count > 1 && spread >= 30.0 {
            let _ = write!(
                out,
                "; UNBALANCED: {spread:.0} points between busiest and idlest CPU"
            );
        }
        out.push('\n');
    }
    let mean_rq = list.iter().map(|s| s.run_queue as f64).sum::<f64>() / list.len() as f64;
    let max_rq = list.iter().map(|s| s.run_queue).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "  run queue  mean {mean_rq:.1}, max {max_rq} runnable tasks on {cpu_count} CPU(s)"
    );

    let peak_procs = list.iter().map(|s| s.processes).max().unwrap_or(0);
    let peak_threads = list.iter().map(|s| s.threads).max().unwrap_or(0);
    let cpu_user: f64 = list.iter().map(|s| s.cpu_user_s).sum();
    let cpu_sys: f64 = list.iter().map(|s| s.cpu_system_s).sum();
    let _ = write!(
        out,
        "  processes  peak {peak_procs} processes, {peak_threads} threads; CPU {cpu_user:.2} s user + {cpu_sys:.2} s system"
    );
    let in_window = |out: &mut String, what: String| {
        if windowed {
            let _ = write!(out, "; in the measured window {what}");
        } else {
            let _ = write!(out, " = {what}");
        }
    };
    if responses > 0 {
        let per = format!(
            "{:.0} µs per response",
            measured.cpu_s() * 1e6 / responses as f64
        );
        let what = if !windowed {
            per
        } else {
            format!(
                "{:.2} s user + {:.2} s system = {per}",
                measured.cpu_user_s, measured.cpu_system_s
            )
        };
        in_window(&mut out, what);
    }
    out.push('\n');
    let peak_rss = list.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let peak_pss = list.iter().map(|s| s.pss_kib).max().unwrap_or(0);
    let _ = write!(
        out,
        "  memory     peak RSS {}, peak PSS {}",
        mib(peak_rss),
        mib(peak_pss)
    );
    if peak_procs > 0 {
        // RSS per process at the sample with the most processes.
        if let Some(s) = list.iter().max_by_key(|s| s.processes) {
            if s.processes > 0 {
                let _ = write!(
                    out,
                    " ({} RSS, {} PSS per process)",
                    mib(s.rss_kib / s.processes as u64),
                    mib(s.pss_kib / s.processes as u64)
                );
            }
        }
    }
    out.push('\n');
    let vol: u64 = list.iter().map(|s| s.voluntary_ctxt_switches).sum();
    let invol: u64 = list.iter().map(|s| s.involuntary_ctxt_switches).sum();
    let _ = write!(
        out,
        "  switches   {vol} voluntary + {invol} involuntary context switches"
    );
    if responses > 0 {
        let what = format!(
            "{:.1} per response ({:.2} involuntary)",
            measured.switches() / responses as f64,
            measured.involuntary_ctxt_switches / responses as f64
        );
        in_window(&mut out, what);
    }
    out.push('\n');
    let peak_fds = list.iter().map(|s| s.open_fds).max().unwrap_or(0);
    let overflows: u64 = list.iter().map(|s| s.listen_overflows).sum();
    let drops: u64 = list.iter().map(|s| s.listen_drops).sum();
    let retrans: u64 = list.iter().map(|s| s.tcp_retrans_segs).sum();
    let peak_tw = list.iter().map(|s| s.time_wait).max().unwrap_or(0);
    let _ = writeln!(out, "  files      peak {peak_fds} open file descriptors");
    let scope = match samples.host.as_ref().map(|h| h.netns.as_str()) {
        Some(ns) if !ns.is_empty() => format!("this stack's namespace {ns} only"),
        _ => "host-wide".to_string(),
    };
    let _ = write!(
        out,
        "  network    listen overflows {overflows}, listen drops {drops}, TCP retransmits {retrans}, TIME_WAIT peak {peak_tw} ({scope})"
    );
    if overflows > 0 || drops > 0 {
        out.push_str(
            "\n             listen queue overflowed: raise the backlog (and net.core.somaxconn) or the server's accept rate",
        );
    }
    out.push('\n');
    write_host(&mut out, samples);
    let _ = writeln!(
        out,
        "  sampler    used {:.2} s CPU on this host",
        samples.sampler_cpu_s
    );
    write_log_messages(&mut out, samples);
    out
}

/// What the host settings did: the namespace and its sysctls, and where each main process
/// ran with which open-file limit, as the kernel reported them.
fn write_host(out: &mut String, samples: &ServerSamples) {
    let Some(host) = &samples.host else { return };
    if !host.netns.is_empty() {
        let set: Vec<String> = host
            .sysctls
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            out,
            "  host       private network namespace {}: {} (the host's values unchanged)",
            host.netns,
            set.join(", ")
        );
    }
    if host.addresses > 1 {
        let _ = writeln!(
            out,
            "             front server on {} addresses, 127.0.0.1 … 127.0.0.{}",
            host.addresses, host.addresses
        );
    }
    let pinned = |cpus: &str| {
        if cpus.is_empty() {
            "not pinned".to_string()
        } else {
            format!("CPUs {cpus}")
        }
    };
    if !host.client_cpus.is_empty() || !host.server_cpus.is_empty() {
        let _ = writeln!(
            out,
            "             stack pinned: {}; generator: {}",
            pinned(&host.server_cpus),
            pinned(&host.client_cpus)
        );
    }
    for p in &host.processes {
        let _ = writeln!(
            out,
            "             {} (pid {}): open files {} soft / {} hard, runs on CPUs {}",
            p.process, p.pid, p.nofile_soft, p.nofile_hard, p.cpus
        );
    }
}

/// One line per main process that died: without it the server neither replaces workers
/// nor stops in order, so the figures after that moment describe a broken stack.
fn write_deaths(out: &mut String, samples: &ServerSamples) {
    for d in &samples.deaths {
        let how = if d.how.is_empty() {
            String::new()
        } else {
            format!(" {}", d.how)
        };
        let when = if d.t_s > 0.0 {
            format!("by {:.2} s into the run", d.t_s)
        } else {
            "before the load began".to_string()
        };
        let _ = writeln!(
            out,
            "  DIED       {} main process (pid {}){how}, {when}: the results describe a broken stack",
            d.process, d.pid
        );
    }
}

/// The servers' warnings and errors, most frequent first, at most ten lines.
fn write_log_messages(out: &mut String, samples: &ServerSamples) {
    if samples.log_messages.is_empty() {
        return;
    }
    let mut messages: Vec<_> = samples.log_messages.iter().collect();
    messages.sort_by_key(|m| std::cmp::Reverse(m.count));
    let total: u64 = messages.iter().map(|m| m.count).sum();
    let _ = writeln!(
        out,
        "  logs       {total} warning/error line(s) from the servers, {} distinct:",
        messages.len()
    );
    for m in messages.iter().take(10) {
        let _ = writeln!(
            out,
            "             {} [{}] ×{}: {}",
            m.server, m.level, m.count, m.message
        );
    }
    if messages.len() > 10 {
        let _ = writeln!(out, "             … and {} more", messages.len() - 10);
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::server::{CpuShare, ServerSample};

    #[test]
    fn names_the_busiest_cpu_and_per_response_figures() {
        let sample = |t: f64| ServerSample {
            t_s: t,
            length_s: 0.25,
            cpus: vec![
                CpuShare {
                    user: 80.0,
                    system: 15.0,
                    idle: 5.0,
                    ..CpuShare::default()
                },
                CpuShare {
                    user: 5.0,
                    idle: 95.0,
                    ..CpuShare::default()
                },
            ],
            run_queue: 3,
            processes: 4,
            threads: 4,
            cpu_user_s: 0.1,
            cpu_system_s: 0.05,
            rss_kib: 4096,
            pss_kib: 2048,
            voluntary_ctxt_switches: 100,
            involuntary_ctxt_switches: 10,
            listen_overflows: 2,
            ..ServerSample::default()
        };
        let samples = ServerSamples {
            interval_ms: 250,
            target: "apache-prefork".into(),
            selector: "sessions 1".into(),
            cpu_count: 2,
            samples: vec![sample(0.25), sample(0.5)],
            parameters: Default::default(),
            parameters_set: Vec::new(),
            log_messages: vec![webtune_model::server::LogMessage {
                server: "php-fpm".into(),
                level: "warn".into(),
                message: "server reached pm.max_children setting (5), consider raising it".into(),
                count: 3,
            }],
            deaths: vec![webtune_model::server::ProcessDeath {
                process: "nginx".into(),
                pid: 4123,
                t_s: 1.25,
                how: "killed by SIGKILL".into(),
            }],
            sampler_cpu_s: 0.01,
            host: None,
            mail: None,
            measured: Vec::new(),
        };
        let text = summarise(&samples, 110);
        assert!(text.contains("busiest cpu0 95% busy"), "{text}");
        assert!(text.contains("idlest cpu1 5% busy"), "{text}");
        assert!(text.contains("UNBALANCED"), "{text}");
        // 0.5 s × (95% + 5%) busy = 0.5 CPU-s, of which the server used 0.3.
        assert!(
            text.contains("host busy 0.5 of 1.0 CPU-s: server 0.3, rest 0.2"),
            "{text}"
        );
        assert!(text.contains("2.0 per response"), "{text}");
        assert!(text.contains("listen overflows 4"), "{text}");
        assert!(text.contains("peak 4 processes"), "{text}");
        assert!(text.contains("peak RSS 4.0 MiB"), "{text}");
        assert!(
            text.contains("php-fpm [warn] ×3: server reached pm.max_children"),
            "{text}"
        );
        assert!(
            text.lines().nth(1).is_some_and(|l| l
                .contains("DIED       nginx main process (pid 4123) killed by SIGKILL, by 1.25 s into the run")),
            "the death comes right after the heading: {text}"
        );
    }

    #[test]
    fn per_response_figures_leave_out_the_warm_up() {
        // `lab run nginx -- --warmup 2s -d 3s`: 2 s of warm-up sampled beside the measured
        // second, each second 0.05 s of server CPU and 100 switches; 1000 responses counted
        // in the measured second only.
        let second = |t_s: f64| ServerSample {
            t_s,
            length_s: 1.0,
            cpu_user_s: 0.04,
            cpu_system_s: 0.01,
            voluntary_ctxt_switches: 90,
            involuntary_ctxt_switches: 10,
            ..ServerSample::default()
        };
        let mut samples = ServerSamples {
            interval_ms: 1000,
            target: "nginx".into(),
            selector: "sessions 1".into(),
            samples: vec![second(1.0), second(2.0), second(3.0)],
            ..ServerSamples::default()
        };
        // Without a window (an older result) every sample counts: 150 µs, 0.3 per response.
        let all = summarise(&samples, 1000);
        assert!(all.contains("= 150 µs per response"), "{all}");
        assert!(
            all.contains("= 0.3 per response (0.03 involuntary)"),
            "{all}"
        );
        // A window over every sample (no warm-up, no cool-down) is not repeated.
        samples.measured = vec![webtune_model::window::Window::new(0.0, 3.0)];
        assert_eq!(summarise(&samples, 1000), all);
        samples.measured = vec![webtune_model::window::Window::new(2.0, 3.0)];
        let text = summarise(&samples, 1000);
        assert!(
            text.contains("3 samples over 3.0 s, 1.0 s of them in the measured window"),
            "{text}"
        );
        assert!(
            text.contains(
                "CPU 0.12 s user + 0.03 s system; in the measured window 0.04 s user + 0.01 s \
                 system = 50 µs per response"
            ),
            "{text}"
        );
        assert!(
            text.contains("in the measured window 0.1 per response (0.01 involuntary)"),
            "{text}"
        );
    }

    #[test]
    fn empty_samples_say_so() {
        let text = summarise(&ServerSamples::default(), 0);
        assert!(text.contains("no samples"));
        assert!(!text.contains("DIED"), "{text}");
    }
}
