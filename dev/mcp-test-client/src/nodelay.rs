//! The server side of a test's TCP connection, read back from the kernel:
//! whether the server set `TCP_NODELAY` on the socket it accepted.
//!
//! For servers that run inside the test's own process (every test server of
//! the workspace does): the accepted socket is one of the process's file
//! descriptors, found by its addresses, the mirror image of the client's.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{BorrowedFd, RawFd};

/// Whether the socket this process accepted for `client`'s connection has
/// `TCP_NODELAY` set (`getsockopt`, as the kernel reports it).
///
/// `client` must be connected to a server in this process, and stay open
/// while this runs. Fails with [`io::ErrorKind::NotFound`] if no socket of
/// the process is the other end of `client` (the server has not accepted
/// it yet, or it runs in another process).
pub fn accepted_nodelay(client: &TcpStream) -> io::Result<bool> {
    let here = client.local_addr()?;
    let there = client.peer_addr()?;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Ok(fd) = entry?.file_name().to_string_lossy().parse::<RawFd>() else {
            continue;
        };
        if let Some(socket) = the_other_end(fd, here, there) {
            return socket.nodelay();
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no socket of this process accepted {here} -> {there}"),
    ))
}

/// A copy of descriptor `fd` (`dup`), if it is the accepted end of the
/// connection from `client` to `server`.
#[allow(unsafe_code)]
fn the_other_end(fd: RawFd, client: SocketAddr, server: SocketAddr) -> Option<TcpStream> {
    // SAFETY: `fd` was listed in /proc/self/fd a moment ago, and is only
    // borrowed long enough to copy it. Another thread may close it
    // meanwhile: the copy then fails, or is of whatever reused
    // the number, which the address check below turns away (a connection's
    // two addresses name it alone while `client` holds it open). Nothing is
    // read from or written to the descriptor, and it is never closed here.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let socket = TcpStream::from(borrowed.try_clone_to_owned().ok()?);
    let ours = socket.local_addr().ok()? == server && socket.peer_addr().ok()? == client;
    ours.then_some(socket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn reads_what_the_server_set_on_the_socket_it_accepted() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        for set in [false, true] {
            let client = TcpStream::connect(addr).unwrap();
            let (accepted, _) = listener.accept().unwrap();
            accepted.set_nodelay(set).unwrap();
            assert_eq!(accepted_nodelay(&client).unwrap(), set);
            // The client's own end is not the accepted one.
            assert!(!client.nodelay().unwrap());
        }
    }

    #[test]
    fn a_connection_not_accepted_yet_is_not_found() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        // Accepted by nobody yet: the kernel holds it in the backlog.
        let err = accepted_nodelay(&client).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
