//! Child processes that cannot outlive their owner: each runs in a process
//! group of its own, and dropping its [`Guard`] kills the whole group (an
//! nginx master's workers too) and reaps it, on every exit path, panics
//! included. If the owner is killed outright (no destructor runs), the
//! kernel kills the child (Linux's parent-death signal).

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};

/// A running child process and its process group.
pub struct Guard {
    child: Child,
    what: String,
}

impl Guard {
    /// Starts `command` in a new process group.
    ///
    /// If the thread that calls this exits first, the child gets SIGKILL:
    /// call it from a thread that lives as long as the child should (the
    /// main thread, a test's thread).
    pub fn spawn(mut command: Command, what: &str) -> io::Result<Guard> {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        // SAFETY: the closure runs in the child between fork and exec, where
        // only async-signal-safe calls are allowed: prctl(2) is a plain
        // system call, and the closure touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
        let child = command.spawn()?;
        Ok(Guard {
            child,
            what: what.to_string(),
        })
    }

    /// The child's process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the child alone.
    pub fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        send(self.pid() as libc::pid_t, signal)
    }

    /// Kills the whole group (SIGKILL) and reaps the child.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            // Exited already; its group may still hold stragglers.
            let _ = send(-(self.pid() as libc::pid_t), libc::SIGKILL);
            return Ok(status);
        }
        let _ = send(-(self.pid() as libc::pid_t), libc::SIGKILL);
        self.child.wait()
    }

    /// The exit status, if the child has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Takes the child's stdout (if it was piped).
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// What this child is, for messages.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(error) = self.kill() {
            eprintln!("could not kill {} (pid {}): {error}", self.what, self.pid());
        }
    }
}

fn send(pid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let result = unsafe { libc::kill(pid, signal) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A directory of its own under the system's temp dir, removed on drop:
/// configuration, logs and nginx's prefix.
pub struct WorkDir(tempfile::TempDir);

impl WorkDir {
    /// A new empty directory named after `what`.
    pub fn new(what: &str) -> io::Result<WorkDir> {
        tempfile::Builder::new()
            .prefix(&format!("sessionreg-{what}-"))
            .tempdir()
            .map(WorkDir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Keeps the directory (for a look at the logs after a failure) and
    /// returns its path.
    pub fn keep(self) -> PathBuf {
        self.0.keep()
    }
}

/// A fresh 256-bit key as 64 hex digits (a line of a request-state key
/// file), from the kernel's CSPRNG.
pub fn random_key() -> Result<String, String> {
    use std::io::Read;
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut key))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(key.iter().map(|b| format!("{b:02x}")).collect())
}

/// The repository's root (where `deploy/` and the workspace's
/// `Cargo.toml` are): two levels above this crate (`dev/fleet/`).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("dev/fleet/ sits in the repository")
}

/// The `mcp_server` example's binary: `$SESSIONREG_MCP_SERVER` if set,
/// else built now by cargo (a no-op when it is up to date) in the same
/// profile as this program, and located from cargo's own report of what it
/// built, so the target directory and profile are always the right ones.
/// Built with the `redis` feature, so any fleet can be joined to a bus
/// (`--redis-url`; without the flag the node is the same as without the
/// feature).
pub fn server_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("SESSIONREG_MCP_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let cargo = std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(Into::into))
        .unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(repo_root()).args([
        "build",
        "--quiet",
        "-p",
        "sessionreg",
        "--example",
        "mcp_server",
        "--features",
        "redis",
        "--message-format=json",
    ]);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    let output = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run cargo to build mcp_server: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo build --example mcp_server failed ({})",
            output.status
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "mcp_server")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo did not report the mcp_server executable".to_string())
}
