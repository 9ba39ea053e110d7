//! CPU time and memory of a process from /proc (Linux only).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux in practice).
fn clk_tck() -> f64 {
    static TCK: OnceLock<f64> = OnceLock::new();
    *TCK.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// A process watched by the harness.
#[derive(Debug, Clone, Copy)]
pub struct Proc {
    pub pid: u32,
}

impl Proc {
    /// CPU seconds used so far (user + system).
    pub fn cpu_secs(self) -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return 0.0;
        };
        // Fields after the command name (which may hold spaces): state is field 3, utime 14,
        // stime 15.
        let Some(pos) = stat.rfind(") ") else {
            return 0.0;
        };
        let f: Vec<&str> = stat[pos + 2..].split_whitespace().collect();
        let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        (tick(11) + tick(12)) as f64 / clk_tck()
    }

    /// Where the process's CPU time stands now, to measure a run from (see [`CpuMark`]).
    pub fn cpu_mark(self) -> CpuMark {
        let mut threads = BTreeMap::new();
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) {
            for task in dir.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                let ran_ns = std::fs::read_to_string(task.path().join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse().ok());
                if let Some(ns) = ran_ns {
                    threads.insert(tid, ns);
                }
            }
        }
        CpuMark {
            threads,
            ticks_secs: self.cpu_secs(),
        }
    }

    /// CPU seconds used since `mark` (see [`CpuMark::secs_until`]).
    pub fn cpu_secs_since(self, mark: &CpuMark) -> f64 {
        mark.secs_until(&self.cpu_mark())
    }

    /// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`).
    pub fn status_kib(self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    pub fn rss_kib(self) -> u64 {
        self.status_kib("VmRSS:")
    }

    pub fn hwm_kib(self) -> u64 {
        self.status_kib("VmHWM:")
    }

    /// Resets the peak RSS (VmHWM) to the current RSS; false if the kernel refused.
    pub fn reset_hwm(self) -> bool {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid), "5").is_ok()
    }

    /// Open file descriptors.
    pub fn fds(self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

/// A process's CPU time at one moment. `utime + stime` in `/proc/<pid>/stat` count in clock
/// ticks (10 ms): a run of 5,000 small GETs costs a proxy 15-20 ticks, so the tick alone moved
/// a run's CPU per request by 5-7 %. Each thread's `schedstat` holds its run time in
/// nanoseconds; a thread that exits takes its time with it, so a run during which one of the
/// mark's threads ended falls back to the ticks.
#[derive(Debug, Clone)]
pub struct CpuMark {
    threads: BTreeMap<u32, u64>,
    ticks_secs: f64,
}

impl CpuMark {
    /// CPU seconds from this mark to `later`: exact (nanoseconds) when every thread of this
    /// mark still runs at `later` (threads started since count from zero), else in ticks.
    pub fn secs_until(&self, later: &CpuMark) -> f64 {
        let all_alive = !self.threads.is_empty()
            && self
                .threads
                .keys()
                .all(|tid| later.threads.contains_key(tid));
        if !all_alive {
            return later.ticks_secs - self.ticks_secs;
        }
        let ran_ns: u64 = later
            .threads
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(self.threads.get(tid).copied().unwrap_or(0)))
            .sum();
        ran_ns as f64 / 1e9
    }
}

/// The soft limit on open files of this process (children inherit it).
pub fn nofile_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

/// The machine, for the report: cores, CPU model, RAM, load average, date.
pub fn machine() -> Vec<(String, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|k| format!("{:.1} GiB", k as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    vec![
        ("nproc".into(), cores.to_string()),
        ("CPU".into(), model),
        ("RAM".into(), mem),
        ("date".into(), date),
    ]
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn me() -> Proc {
        Proc {
            pid: std::process::id(),
        }
    }

    /// Spins until the tick counter has moved by `secs` (at most 10 s of wall time).
    fn burn(secs: f64) {
        let start = me().cpu_secs();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut x = 0u64;
        while me().cpu_secs() - start < secs && std::time::Instant::now() < deadline {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
        }
    }

    #[test]
    fn the_exact_count_follows_the_ticks() {
        let mark = me().cpu_mark();
        assert!(
            !mark.threads.is_empty(),
            "no schedstat under /proc/self/task"
        );
        burn(0.05);
        let exact = me().cpu_secs_since(&mark);
        let ticks = me().cpu_secs() - mark.ticks_secs;
        assert!(exact > 0.0, "{exact}");
        // Ticks round down to 10 ms at both ends; other test threads may run too.
        assert!(exact >= ticks - 0.03, "exact {exact} s, ticks {ticks} s");
    }

    fn mark(threads: &[(u32, u64)], ticks_secs: f64) -> CpuMark {
        CpuMark {
            threads: threads.iter().copied().collect(),
            ticks_secs,
        }
    }

    #[test]
    fn threads_count_exactly_and_new_ones_from_zero() {
        let before = mark(&[(1, 5_000_000), (2, 1_000_000)], 0.0);
        let after = mark(&[(1, 12_000_000), (2, 1_500_000), (3, 250_000)], 0.01);
        assert!((before.secs_until(&after) - 0.00775).abs() < 1e-12);
    }

    #[test]
    fn a_thread_that_ended_falls_back_to_the_ticks() {
        let before = mark(&[(1, 5_000_000), (2, 1_000_000)], 0.30);
        let after = mark(&[(1, 12_000_000)], 0.32);
        assert!((before.secs_until(&after) - 0.02).abs() < 1e-12);
        // An unreadable /proc (no threads) too.
        assert!((mark(&[], 1.0).secs_until(&mark(&[], 1.5)) - 0.5).abs() < 1e-12);
    }
}
