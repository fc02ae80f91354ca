//! A forked child must not mint the secrets its parent mints next: the
//! per-thread batch of secrets drawn ahead (and the generator's state) is
//! copied by `fork`, so the child discards it and reseeds.
//!
//! Its own test binary, with one test: it forks, and a child of a process
//! with other test threads running would be a riskier place to run code.
#![cfg(unix)]

use sessionreg::Registry;

const IDS: usize = 16;

fn secrets(registry: &Registry<()>) -> [u64; IDS] {
    std::array::from_fn(|_| {
        let bytes = registry.insert(()).unwrap().to_bytes();
        u64::from_be_bytes(bytes[16..].try_into().unwrap())
    })
}

#[test]
fn a_forked_child_mints_other_secrets_than_its_parent() {
    let registry = Registry::builder().capacity(4 * IDS).build().unwrap();
    // Draw a batch before forking, so the child inherits a half-used one.
    registry.insert(()).unwrap();
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only mints ids, writes to the pipe and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let minting = std::panic::AssertUnwindSafe(|| secrets(&registry));
        let code = match std::panic::catch_unwind(minting) {
            Ok(minted) => {
                let bytes: Vec<u8> = minted.iter().flat_map(|s| s.to_le_bytes()).collect();
                // SAFETY: writes `bytes.len()` bytes from a live buffer.
                let written = unsafe { libc::write(fds[1], bytes.as_ptr().cast(), bytes.len()) };
                i32::from(written != bytes.len() as isize)
            }
            Err(_) => 2,
        };
        // SAFETY: ends the child without running the parent's atexit or
        // test-harness code.
        unsafe { libc::_exit(code) };
    }
    let parent = secrets(&registry);
    let mut bytes = [0u8; 8 * IDS];
    let mut read = 0;
    while read < bytes.len() {
        // SAFETY: reads into the unread rest of a live buffer.
        let n = unsafe {
            libc::read(
                fds[0],
                bytes[read..].as_mut_ptr().cast(),
                bytes.len() - read,
            )
        };
        assert!(n > 0, "the child wrote {read} of {} bytes", bytes.len());
        read += n as usize;
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
    let child: Vec<u64> = bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for secret in &child {
        assert!(
            !parent.contains(secret),
            "the child minted a secret its parent also minted"
        );
    }
}
