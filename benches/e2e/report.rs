//! What the bench prints: Markdown tables of the rounds, the medians, the
//! ratio of two servers, RSS, and the idle measurement.

use crate::measure::{Churn, Idle, Work};
use crate::process::Server;

/// The median (the mean of the middle two for an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Bytes in MiB.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The churn table's title and header.
pub fn churn_header(work: Work, length: &str, clients: usize, rounds: usize) {
    let (what, unit) = match work {
        Work::Sessions => (
            "sessions (initialize, notifications/initialized, DELETE; 3 requests each)",
            "session",
        ),
        Work::Modern => (
            "2026-07-28 requests (tools/call of echo, one POST each, no session)",
            "request",
        ),
        Work::TaskGet => (
            "2026-07-28 tasks/get requests (each of a random live task)",
            "request",
        ),
    };
    println!(
        "\nchurn: {length} of {what} per server per round, {clients} client connections \
         (closed loop: concurrency {clients}), {rounds} round(s); every answer checked"
    );
    println!(
        "| round | server | {unit}s | {unit}s/s | server CPU per {unit} | of which user / system | CPU use | latency p50 / p99 / p99.9 per request |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
}

/// One round's row for one server.
pub fn churn_round(round: usize, name: &str, c: &Churn) {
    println!(
        "| {} | {} | {} | {:.0} | {:.1} µs | {:.1} / {:.1} µs | {:.0}% | {:.0} / {:.0} / {:.0} µs |",
        round + 1,
        name,
        c.units,
        c.rate,
        c.cpu_us(),
        c.user_us,
        c.system_us,
        c.utilisation,
        c.p50_us,
        c.p99_us,
        c.p999_us,
    );
}

/// The medians of one server's rounds.
pub struct Medians {
    pub rate: f64,
    pub cpu_us: f64,
    pub user_us: f64,
    pub system_us: f64,
    pub utilisation: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

impl Medians {
    pub fn of(runs: &[Churn]) -> Medians {
        let med = |f: fn(&Churn) -> f64| median(runs.iter().map(f).collect());
        Medians {
            rate: med(|c| c.rate),
            cpu_us: med(Churn::cpu_us),
            user_us: med(|c| c.user_us),
            system_us: med(|c| c.system_us),
            utilisation: med(|c| c.utilisation),
            p50_us: med(|c| c.p50_us),
            p99_us: med(|c| c.p99_us),
            p999_us: med(|c| c.p999_us),
        }
    }
}

/// A ratio for the tables: three significant digits below 0.1, "—" where
/// the divisor was zero (a server with no system time in a round).
fn ratio(x: f64) -> String {
    if !x.is_finite() {
        "—".into()
    } else if x < 0.1 {
        format!("{x:.3}×")
    } else {
        format!("{x:.2}×")
    }
}

/// The first server ÷ another, each figure the median of the per-round
/// ratios (drift between rounds cancels in it).
pub struct Ratios {
    pub rate: f64,
    pub cpu: f64,
    pub user: f64,
    pub system: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    /// The per-round ratios of CPU per unit.
    pub cpu_rounds: Vec<f64>,
}

impl Ratios {
    pub fn of(first: &[Churn], other: &[Churn]) -> Ratios {
        let per_round = |f: fn(&Churn) -> f64| -> Vec<f64> {
            first.iter().zip(other).map(|(a, b)| f(a) / f(b)).collect()
        };
        let ratio = |f: fn(&Churn) -> f64| median(per_round(f));
        Ratios {
            rate: ratio(|c| c.rate),
            cpu: ratio(Churn::cpu_us),
            user: ratio(|c| c.user_us),
            system: ratio(|c| c.system_us),
            p50: ratio(|c| c.p50_us),
            p99: ratio(|c| c.p99_us),
            p999: ratio(|c| c.p999_us),
            cpu_rounds: per_round(Churn::cpu_us),
        }
    }
}

/// The medians over the rounds, a row per server, with RSS after the
/// churn; then the first server ÷ each other one.
pub fn medians(servers: &[Server], runs: &[Vec<Churn>], rss_after: &[u64], work: Work) {
    let unit = work.unit();
    println!("\nmedians over the rounds:");
    println!("| server | {unit}s/s | server CPU per {unit} (µs) | of which user / system (µs) | CPU use (of one core) | latency p50 / p99 / p99.9 (µs) | RSS after (MiB) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for ((server, runs), rss) in servers.iter().zip(runs).zip(rss_after) {
        let m = Medians::of(runs);
        println!(
            "| {} | {:.0} | {:.1} | {:.1} / {:.1} | {:.0}% | {:.0} / {:.0} / {:.0} | {:.1} |",
            server.name,
            m.rate,
            m.cpu_us,
            m.user_us,
            m.system_us,
            m.utilisation,
            m.p50_us,
            m.p99_us,
            m.p999_us,
            mib(*rss)
        );
    }
    if servers.len() < 2 {
        return;
    }
    println!(
        "\n{} ÷ each other server, median of the per-round ratios (lower is better but for {unit}s/s):",
        servers[0].name
    );
    println!("| ÷ server | {unit}s/s | server CPU per {unit} | user | system | p50 | p99 | p99.9 | CPU per {unit}, per round |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for (server, other) in servers.iter().zip(runs).skip(1) {
        let r = Ratios::of(&runs[0], other);
        println!(
            "| {} | {} | **{}** | {} | {} | {} | **{}** | {} | {} |",
            server.name,
            ratio(r.rate),
            ratio(r.cpu),
            ratio(r.user),
            ratio(r.system),
            ratio(r.p50),
            ratio(r.p99),
            ratio(r.p999),
            r.cpu_rounds
                .iter()
                .map(|&x| ratio(x))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// One server's system calls under `--strace`: its name, (call, calls per
/// unit) most first, and all calls per unit.
pub type StraceRow = (String, Vec<(String, f64)>, f64);

/// The system-call table of `--strace`.
pub fn strace(rows: &[StraceRow], n: usize, work: Work) {
    let unit = work.unit();
    println!("\nsystem calls per {unit} (strace -c -f attached to each server over {n} {unit}s; the five most frequent):");
    println!("| server | system calls per {unit} | the most frequent, per {unit} |");
    println!("|---|---:|---|");
    for (name, calls, total) in rows {
        println!(
            "| {name} | {total:.2} | {} |",
            calls
                .iter()
                .take(5)
                .map(|(c, k)| format!("{c} {k:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// The medians and ratios as JSON (for `benches/headline.py` and the
/// report), hand-written: a flat object per server.
pub fn json(servers: &[Server], runs: &[Vec<Churn>], rss_after: &[u64], work: Work) -> String {
    let mut out = format!("{{\"unit\":\"{}\",\"servers\":[", work.unit());
    for (i, (server, runs)) in servers.iter().zip(runs).enumerate() {
        let m = Medians::of(runs);
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"name\":{:?},\"rate\":{:.3},\"cpu_us\":{:.3},\"user_us\":{:.3},\"system_us\":{:.3},\"p50_us\":{:.1},\"p99_us\":{:.1},\"p999_us\":{:.1},\"rss_mib\":{:.2}",
            server.name, m.rate, m.cpu_us, m.user_us, m.system_us, m.p50_us, m.p99_us, m.p999_us, mib(rss_after[i])
        ));
        out.push('}');
    }
    out.push_str("],\"ratios\":[");
    for (i, other) in runs.iter().enumerate().skip(1) {
        let r = Ratios::of(&runs[0], other);
        if i > 1 {
            out.push(',');
        }
        let fields = [
            ("rate", r.rate),
            ("cpu", r.cpu),
            ("user", r.user),
            ("system", r.system),
            ("p50", r.p50),
            ("p99", r.p99),
            ("p999", r.p999),
        ];
        out.push_str(&format!(
            "{{\"of\":{:?},\"to\":{:?}",
            servers[0].name, servers[i].name
        ));
        for (key, x) in fields {
            // JSON has no infinity: a zero divisor is null.
            let x = if x.is_finite() {
                format!("{x:.4}")
            } else {
                "null".into()
            };
            out.push_str(&format!(",\"{key}\":{x}"));
        }
        out.push('}');
    }
    out.push_str("]}\n");
    out
}

/// A server's RSS at start, before the churn and after it (bytes).
pub fn rss(name: &str, start: u64, before: u64, after: u64) {
    println!(
        "RSS of {}: at start / before churn / after churn {:.1} / {:.1} / {:.1} MiB",
        name,
        mib(start),
        mib(before),
        mib(after)
    );
}

/// The idle measurement of one server, as a table.
pub fn idle(name: &str, m: &Idle) {
    let idle = m.sessions;
    println!("\nidle, {name}: {idle} sessions opened and left open on one connection");
    println!("| metric | value |");
    println!("|---|---:|");
    println!(
        "| RSS per idle session | {:.0} bytes |",
        m.rss_with.saturating_sub(m.rss_before) as f64 / idle as f64
    );
    println!(
        "| RSS before / with idle sessions / after deleting them | {:.1} / {:.1} / {:.1} MiB |",
        mib(m.rss_before),
        mib(m.rss_with),
        mib(m.rss_after)
    );
    println!(
        "| server threads before / with idle sessions | {} / {} |",
        m.threads_before, m.threads_with
    );
    if let (Some(before), Some(with)) = (m.tasks_before, m.tasks_with) {
        println!(
            "| tokio tasks per idle session ({before} before, {with} with them) | {:.2} |",
            (with - before) / idle as f64
        );
    }
    println!(
        "| sessionreg_sessions_live with idle / after | {} / {} |",
        m.live_with.map_or("n/a".into(), |v| v.to_string()),
        m.live_after.map_or("n/a".into(), |v| v.to_string())
    );
}
