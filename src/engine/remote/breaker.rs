//! The remote engine's circuit breaker: after [`Breaker::THRESHOLD`]
//! failures in a row, requests are refused at once for a cooldown, or until
//! a health probe finds an engine that was down answering again.

use std::time::{Duration, Instant};

/// How the engine failed, which decides what closes the breaker again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Unreachable or silent: a probe that gets an answer closes it.
    Down,
    /// Answering garbage or 5xx: only a request that succeeds after the
    /// cooldown closes it.
    Broken,
}

/// Open: until when requests are refused, and why.
#[derive(Debug)]
struct Open {
    until: Instant,
    reason: String,
    failure: Failure,
}

/// Consecutive failures, and whether requests are refused.
#[derive(Debug, Default)]
pub struct Breaker {
    failures: u32,
    open: Option<Open>,
}

impl Breaker {
    pub const THRESHOLD: u32 = 3;
    pub const COOLDOWN: Duration = Duration::from_secs(10);

    pub fn fail(&mut self, reason: &str, failure: Failure) {
        self.failures += 1;
        if self.failures >= Self::THRESHOLD {
            self.open = Some(Open {
                until: Instant::now() + Self::COOLDOWN,
                reason: reason.to_owned(),
                failure,
            });
        }
    }

    pub fn succeed(&mut self) {
        self.failures = 0;
        self.open = None;
    }

    /// A health probe got an answer: an engine that was down is back. One
    /// that answered garbage stays refused until its cooldown ends and a
    /// request succeeds.
    pub fn probe_answered(&mut self) {
        if self.open.as_ref().is_none_or(|o| o.failure == Failure::Down) {
            self.succeed();
        }
    }

    /// Why requests are refused now, if they are.
    pub fn refusal(&self) -> Option<String> {
        let open = self.open.as_ref()?;
        let left = open.until.checked_duration_since(Instant::now())?;
        Some(format!(
            "the engine failed {} times in a row (last: {}); requests are refused for {} s more, or until it answers a health probe",
            self.failures,
            open.reason,
            left.as_secs() + 1
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_opens_after_repeated_failures_and_closes_on_success() {
        let mut b = Breaker::default();
        b.fail("x", Failure::Down);
        b.fail("x", Failure::Down);
        assert!(b.refusal().is_none());
        b.fail("connection refused", Failure::Down);
        let why = b.refusal().expect("open");
        assert!(why.contains("3 times") && why.contains("connection refused"), "{why}");
        b.probe_answered();
        assert!(b.refusal().is_none(), "a down engine that answers again is used again");

        for _ in 0..3 {
            b.fail("garbage", Failure::Broken);
        }
        b.probe_answered();
        assert!(
            b.refusal().is_some(),
            "a broken engine stays refused while it cools down"
        );
        b.succeed();
        assert!(b.refusal().is_none());
    }
}
