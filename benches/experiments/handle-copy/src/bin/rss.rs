//! What memory a design of the handle costs, as the OS counts it (resident
//! set), where `benches/memory.rs` counts the bytes requested:
//!
//! * `rss sessions [n]`: the resident memory a registry of `n` live
//!   sessions (default a million) of `u64` adds, less the vector that keeps
//!   their ids, per session;
//! * `rss blocks <size> <align> [n]`: the resident memory `n` blocks
//!   (default 1,000) of `size` bytes aligned to `align` add, each written
//!   whole, per block; with `align` 0, `size` bytes aligned to 16 from
//!   inside a block of `size + 64 KiB`, aligned by hand to 64 KiB (what a
//!   page aligned by its owner, not by the allocator, costs).
//!
//! Linux only (`/proc/self/status`).

use std::alloc::{alloc, Layout};

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("a VmRSS line");
    line.split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS: <n> kB")
}

fn sessions(n: usize) {
    let registry = sessionreg::Registry::<u64>::builder()
        .capacity(n)
        .build()
        .expect("a registry");
    let mut ids = Vec::with_capacity(n);
    let ids_kib = (ids.capacity() * std::mem::size_of::<sessionreg::SessionId>()) as u64 / 1024;
    let before = resident_kib();
    ids.extend((0..n as u64).map(|i| registry.insert(i).expect("within capacity")));
    let added = resident_kib() - before;
    println!(
        "{n} live sessions: {:.1} bytes a session resident ({added} KiB, less {ids_kib} KiB of ids)",
        (added - ids_kib) as f64 * 1024.0 / n as f64
    );
}

fn blocks(size: usize, align: usize, n: usize) {
    const BY_HAND: usize = 64 * 1024;
    assert!(size > 0, "a block of at least one byte");
    let mut kept = Vec::with_capacity(n);
    let before = resident_kib();
    for _ in 0..n {
        let by_hand = align == 0;
        let layout = if by_hand {
            Layout::from_size_align(size + BY_HAND, 16)
        } else {
            Layout::from_size_align(size, align)
        }
        .expect("a layout");
        // SAFETY: the layout's size is not zero (asserted above).
        let block = unsafe { alloc(layout) };
        assert!(!block.is_null(), "out of memory");
        let at = if by_hand {
            ((block as usize + BY_HAND - 1) & !(BY_HAND - 1)) - block as usize
        } else {
            0
        };
        // SAFETY: `at + size` is within the block: `size + BY_HAND` long
        // when aligned by hand (`at < BY_HAND`), `size` long otherwise.
        unsafe { std::ptr::write_bytes(block.add(at), 1, size) };
        kept.push(block);
    }
    let added = resident_kib() - before;
    println!(
        "{n} blocks of {size} bytes, {}: {:.1} KiB a block resident ({:+.1} over its size)",
        if align == 0 {
            "aligned by hand to 64 KiB".to_string()
        } else {
            format!("aligned to {align}")
        },
        added as f64 / n as f64,
        added as f64 / n as f64 - size as f64 / 1024.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |at: usize, default: usize| {
        args.get(at)
            .map(|arg| arg.parse().expect("a number"))
            .unwrap_or(default)
    };
    match args.first().map(String::as_str) {
        Some("sessions") => sessions(number(1, 1_000_000)),
        Some("blocks") if args.len() >= 3 => blocks(number(1, 0), number(2, 0), number(3, 1000)),
        _ => eprintln!("usage: rss sessions [n] | rss blocks <size> <align> [n]"),
    }
}
