//! A closed standard output ends a command quietly with status 0, as `ls | head` does:
//! `surfgym campaign list | head -1` must not print a panic and a backtrace when `head`
//! stops reading. Rust ignores SIGPIPE, so a write to a closed pipe fails with
//! `BrokenPipe`: `println!` panics with it, a `write!` returns it as an error; both end
//! here.

use std::any::Any;

/// Makes a panic of `println!` on a closed stdout exit the process with status 0; every
/// other panic reports as before.
pub fn exit_quietly_when_stdout_closes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if is_closed_stdout(info.payload()) {
            std::process::exit(0);
        }
        report(info);
    }));
}

/// `println!`'s panic on a closed pipe: "failed printing to stdout: Broken pipe (os error
/// 32)".
fn is_closed_stdout(payload: &(dyn Any + Send)) -> bool {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    message.is_some_and(|m| m.starts_with("failed printing to stdout") && m.contains("Broken pipe"))
}

/// Whether a command's error is a write to a closed pipe (a `write!` to stdout that
/// returned it), which is no error to report.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == BrokenPipe)
            // `serde_json::to_writer` wraps the write's error in its own.
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_stdout_is_quiet() {
        let closed: Box<dyn Any + Send> =
            Box::new("failed printing to stdout: Broken pipe (os error 32)".to_string());
        assert!(is_closed_stdout(closed.as_ref()));
        let other: Box<dyn Any + Send> = Box::new("index out of bounds");
        assert!(!is_closed_stdout(other.as_ref()));
        let pipe = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&pipe.context("writing the listing")));
        assert!(!is_broken_pipe(&anyhow::anyhow!("no such campaign")));
        let json = serde_json::Error::io(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&anyhow::Error::from(json)));
    }
}
