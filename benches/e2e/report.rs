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

/// One server's medians over its rounds, as a table row.
fn print_churn(name: &str, runs: &[Churn], work: Work) {
    let med = |f: fn(&Churn) -> f64| median(runs.iter().map(f).collect());
    print!(
        "| {name} | {:.0} | {:.1} | {:.1} / {:.1} | {:.0}% |",
        med(|c| c.rate),
        med(Churn::cpu_us),
        med(|c| c.user_us),
        med(|c| c.system_us),
        med(|c| c.utilisation),
    );
    if work == Work::Modern {
        print!(" {} |", runs.iter().map(|c| c.failures).sum::<usize>());
    }
    println!();
}

/// The churn table's title and header.
pub fn churn_header(work: Work, units: usize, clients: usize, rounds: usize) {
    let (what, unit) = match work {
        Work::Sessions => (
            "sessions per round (initialize, notifications/initialized, DELETE)",
            "session",
        ),
        Work::Modern => (
            "2026-07-28 requests per round (tools/call of echo, one POST each, no session)",
            "request",
        ),
    };
    println!("\nchurn: {units} {what}, {clients} client connections, {rounds} round(s)");
    print!(
        "| round | server | {unit}s/s | server CPU per {unit} | of which user / system | CPU use |"
    );
    if work == Work::Modern {
        print!(" failed |");
    }
    println!();
    print!("|---:|---|---:|---:|---:|---:|");
    if work == Work::Modern {
        print!("---:|");
    }
    println!();
}

/// One round's row for one server.
pub fn churn_round(round: usize, name: &str, c: &Churn, work: Work) {
    print!(
        "| {} | {} | {:.0} | {:.1} µs | {:.1} / {:.1} µs | {:.0}% |",
        round + 1,
        name,
        c.rate,
        c.cpu_us(),
        c.user_us,
        c.system_us,
        c.utilisation
    );
    if work == Work::Modern {
        print!(" {} |", c.failures);
    }
    println!();
}

/// The medians over the rounds, a row per server; with two servers, the
/// median of the per-round ratios of the first to the second.
pub fn medians(servers: &[Server], runs: &[Vec<Churn>], work: Work) {
    let unit = work.unit();
    println!("\nmedians over the rounds:");
    print!("| server | {unit}s/s | server CPU per {unit} (µs) | of which user / system (µs) | CPU use (of one core) |");
    if work == Work::Modern {
        print!(" failed (all rounds) |");
    }
    println!();
    print!("|---|---:|---:|---:|---:|");
    if work == Work::Modern {
        print!("---:|");
    }
    println!();
    for (server, runs) in servers.iter().zip(runs) {
        print_churn(&server.name, runs, work);
    }
    if servers.len() == 2 {
        // Each round's ratio, then the median: drift between rounds cancels.
        let ratio = |f: fn(&Churn) -> f64| {
            median(
                runs[0]
                    .iter()
                    .zip(&runs[1])
                    .map(|(a, b)| f(a) / f(b))
                    .collect(),
            )
        };
        println!(
            "\n{} ÷ {}, median of the per-round ratios: {unit}s/s {:.2}×, server CPU per {unit} {:.2}× (user {:.2}×, system {:.2}×)",
            servers[0].name,
            servers[1].name,
            ratio(|c| c.rate),
            ratio(Churn::cpu_us),
            ratio(|c| c.user_us),
            ratio(|c| c.system_us),
        );
        let per_round = |f: fn(&Churn) -> f64| {
            runs[0]
                .iter()
                .zip(&runs[1])
                .map(|(a, b)| format!("{:.2}", f(a) / f(b)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "per-round ratios: {unit}s/s {}; server CPU per {unit} {}",
            per_round(|c| c.rate),
            per_round(Churn::cpu_us)
        );
    }
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
