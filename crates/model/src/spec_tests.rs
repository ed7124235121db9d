//! Unit tests of `spec` (kept apart so the module stays readable).
use super::*;

fn timed(seconds: f64) -> RunSpec {
    RunSpec {
        stop: StopCondition::Duration { seconds },
        ..RunSpec::default()
    }
}

#[test]
fn the_default_spec_is_valid() {
    assert_eq!(RunSpec::default().validate(), Ok(()));
}

/// Issue 40: what `--http3` does not combine with, each refused in one line.
#[test]
fn http3_refuses_what_it_does_not_support_yet() {
    let h3 = RunSpec {
        http3: true,
        streams: 4,
        ..RunSpec::default()
    };
    assert_eq!(h3.validate(), Ok(()));
    let refused = |spec: RunSpec| spec.validate().unwrap_err().to_string();
    let both = refused(RunSpec {
        http2: true,
        ..h3.clone()
    });
    assert!(both.contains("two protocols"), "{both}");
    let open = RunSpec {
        load: LoadMode::Open {
            rate: 100.0,
            arrival: Arrival::Uniform,
        },
        ..h3.clone()
    };
    assert_eq!(open.validate(), Ok(()));
    let stages = refused(RunSpec {
        stages: vec![Stage {
            seconds: 1.0,
            target: 10.0,
        }],
        ..open
    });
    assert!(stages.contains("--stages"), "{stages}");
    let early = refused(RunSpec {
        zero_rtt: true,
        tls: TlsOptions {
            no_resume: true,
            ..TlsOptions::default()
        },
        ..h3.clone()
    });
    assert!(early.contains("--no-tls-resume"), "{early}");
    let alone = refused(RunSpec {
        zero_rtt: true,
        ..RunSpec::default()
    });
    assert_eq!(alone, "--0rtt needs --http3");
    let streams = refused(RunSpec {
        streams: 2,
        ..RunSpec::default()
    });
    assert!(streams.contains("--http2 or --http3"), "{streams}");
}

#[test]
fn streams_past_the_range_are_refused_naming_it() {
    let h2 = |streams| RunSpec {
        http2: true,
        streams,
        ..RunSpec::default()
    };
    assert_eq!(h2(MAX_STREAMS).validate(), Ok(()));
    let e = h2(u32::MAX).validate().unwrap_err();
    assert_eq!(
        e.to_string(),
        "--streams must be from 1 to 10000 (HTTP/2 streams per connection), not 4294967295"
    );
}

#[test]
fn zero_lengths_counts_and_timeouts_are_refused() {
    let bad = [
        (timed(0.0), "-d/--duration must be longer than 0"),
        (
            RunSpec {
                stop: StopCondition::Requests { count: 0 },
                ..RunSpec::default()
            },
            "-n/--requests must be at least 1",
        ),
        (
            RunSpec {
                connections: 0,
                ..RunSpec::default()
            },
            "-c/--connections must be at least 1",
        ),
        (
            RunSpec {
                timeout_ms: 0,
                ..RunSpec::default()
            },
            "--timeout must be longer than 0",
        ),
        (
            RunSpec {
                connect_timeout_ms: 0,
                ..RunSpec::default()
            },
            "--connect-timeout must be longer than 0",
        ),
        (
            RunSpec {
                interval_ms: 0,
                ..RunSpec::default()
            },
            "--interval must be longer than 0",
        ),
        (
            RunSpec {
                load: LoadMode::Open {
                    rate: 0.0,
                    arrival: Arrival::Uniform,
                },
                ..RunSpec::default()
            },
            "--rate must be a positive number",
        ),
        (
            RunSpec {
                stages: vec![Stage {
                    seconds: 0.0,
                    target: 5.0,
                }],
                ..RunSpec::default()
            },
            "no time at all",
        ),
    ];
    for (spec, words) in bad {
        let e = spec.validate().expect_err(words).to_string();
        assert!(e.contains(words), "{e:?} lacks {words:?}");
    }
}

#[test]
fn a_rate_no_machine_can_send_is_refused_naming_the_limit() {
    let open = |rate, stages: Vec<Stage>| RunSpec {
        load: LoadMode::Open {
            rate,
            arrival: Arrival::Uniform,
        },
        stages,
        ..timed(1.0)
    };
    let e = open(1e308, vec![]).validate().unwrap_err().to_string();
    assert_eq!(
        e,
        "--rate 1e308 is more than any machine can send: at most 1e9 requests/s \
         (one a nanosecond, the resolution of the schedule's clock)"
    );
    assert_eq!(open(MAX_RATE_PER_S, vec![]).validate(), Ok(()));
    let ramp = vec![Stage {
        seconds: 1.0,
        target: 2e9,
    }];
    let e = open(10.0, ramp).validate().unwrap_err().to_string();
    assert!(e.starts_with("--stages target 2e9 is more than"), "{e}");
    // Closed-loop stage targets are connections, not rates: -c's own limits apply.
    let closed = RunSpec {
        stages: vec![Stage {
            seconds: 1.0,
            target: 2e9,
        }],
        ..RunSpec::default()
    };
    assert_eq!(closed.validate(), Ok(()));
}

#[test]
fn warmup_and_cooldown_must_leave_something() {
    let with = |seconds, warmup_s, cooldown_s| RunSpec {
        warmup_s,
        cooldown_s,
        ..timed(seconds)
    };
    assert_eq!(with(3.0, 1.0, 1.0).validate(), Ok(()));
    // A warm-up as long as the run, alone or with a cool-down: nothing left.
    for spec in [
        with(1.0, 2.0, 0.0),
        with(2.0, 1.0, 1.0),
        with(1.0, 1.0, 0.0),
    ] {
        assert!(matches!(
            spec.validate(),
            Err(SpecError::NothingToMeasure { .. })
        ));
    }
    let counted = RunSpec {
        stop: StopCondition::Requests { count: 100 },
        warmup_s: 1.0,
        ..RunSpec::default()
    };
    assert_eq!(
        counted.validate(),
        Err(SpecError::NeedsTimedRun { flag: "--warmup" })
    );
    let ramp = RunSpec {
        stages: vec![Stage {
            seconds: 4.0,
            target: 5.0,
        }],
        warmup_s: 1.0,
        ..timed(0.0)
    };
    assert_eq!(ramp.validate(), Ok(()), "stages set the length, not -d");
}
