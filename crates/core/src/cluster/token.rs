//! What a token service answers: a status (Sentinel's `TokenResultStatus`, one signed byte on the
//! wire), the tokens left and how long to wait.

/// What a token server answers a request with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenStatus {
    /// The request was malformed or named an invalid count (−4).
    BadRequest,
    /// The namespace's `maxAllowedQps` was exceeded (−2).
    TooManyRequest,
    /// The server failed; also the status of a bad ping and of a request of an unknown type (−1).
    Fail,
    /// The tokens were granted (0).
    Ok,
    /// The tokens were refused (1).
    Blocked,
    /// A prioritized request is granted after `wait_ms` (2).
    ShouldWait,
    /// The server has no rule of that flow id (3).
    NoRuleExists,
    /// The rule's reference rule does not exist (4).
    NoRefRuleExists,
    /// The token service is not available (5).
    NotAvailable,
    /// Concurrency tokens were released (6).
    ReleaseOk,
    /// Concurrency tokens were already released (7).
    AlreadyRelease,
}

impl TokenStatus {
    /// Every status, in code order.
    pub const ALL: [TokenStatus; 11] = [
        TokenStatus::BadRequest,
        TokenStatus::TooManyRequest,
        TokenStatus::Fail,
        TokenStatus::Ok,
        TokenStatus::Blocked,
        TokenStatus::ShouldWait,
        TokenStatus::NoRuleExists,
        TokenStatus::NoRefRuleExists,
        TokenStatus::NotAvailable,
        TokenStatus::ReleaseOk,
        TokenStatus::AlreadyRelease,
    ];

    /// The status's byte on the wire.
    pub const fn code(self) -> i8 {
        match self {
            TokenStatus::BadRequest => -4,
            TokenStatus::TooManyRequest => -2,
            TokenStatus::Fail => -1,
            TokenStatus::Ok => 0,
            TokenStatus::Blocked => 1,
            TokenStatus::ShouldWait => 2,
            TokenStatus::NoRuleExists => 3,
            TokenStatus::NoRefRuleExists => 4,
            TokenStatus::NotAvailable => 5,
            TokenStatus::ReleaseOk => 6,
            TokenStatus::AlreadyRelease => 7,
        }
    }

    /// The status of a byte, if it is one (−3 is not).
    pub const fn from_code(code: i8) -> Option<TokenStatus> {
        Some(match code {
            -4 => TokenStatus::BadRequest,
            -2 => TokenStatus::TooManyRequest,
            -1 => TokenStatus::Fail,
            0 => TokenStatus::Ok,
            1 => TokenStatus::Blocked,
            2 => TokenStatus::ShouldWait,
            3 => TokenStatus::NoRuleExists,
            4 => TokenStatus::NoRefRuleExists,
            5 => TokenStatus::NotAvailable,
            6 => TokenStatus::ReleaseOk,
            7 => TokenStatus::AlreadyRelease,
            _ => return None,
        })
    }
}

/// A token service's answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenResult {
    /// How it went.
    pub status: TokenStatus,
    /// Tokens left in the window after this request (may be negative).
    pub remaining: i32,
    /// How long a [`TokenStatus::ShouldWait`] request waits, ms.
    pub wait_ms: i32,
}

impl TokenResult {
    /// `status`, with nothing left and no wait.
    pub const fn of(status: TokenStatus) -> Self {
        TokenResult {
            status,
            remaining: 0,
            wait_ms: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TokenStatus;

    #[test]
    fn codes_are_sentinels_and_read_back() {
        let codes: Vec<i8> = TokenStatus::ALL.iter().map(|s| s.code()).collect();
        assert_eq!(codes, [-4, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7]);
        for status in TokenStatus::ALL {
            assert_eq!(TokenStatus::from_code(status.code()), Some(status));
        }
        assert_eq!(TokenStatus::from_code(-3), None);
        assert_eq!(TokenStatus::from_code(8), None);
    }
}
