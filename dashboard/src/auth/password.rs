//! Passwords: Argon2id hashes in PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$…`), salts from the
//! operating system, the rules a username and a password must follow, and generated passwords.
//!
//! Checking the password of a user that does not exist still runs one Argon2 verification, against
//! a hash of a random password made once per process, so the time taken does not tell whether the
//! user exists.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use super::session::{RandomError, random_bytes};
use crate::error::AppError;

/// The fewest characters a password may have.
pub const MIN_PASSWORD_LEN: usize = 12;

/// The most bytes a password may have (a bound on the work a sign-in makes).
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// The most characters a username may have.
pub const MAX_USERNAME_LEN: usize = 64;

/// The characters of a generated password.
const GENERATED_ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";

/// The length of a generated password (100 bits).
const GENERATED_LEN: usize = 20;

/// Why a password could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// No randomness for the salt.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// Argon2 refused.
    #[error("password hashing failed: {0}")]
    Hash(argon2::password_hash::Error),
}

/// Argon2id, version 19, with the crate's default cost (19 MiB, 2 passes, 1 lane).
fn hasher() -> Argon2<'static> {
    Argon2::default()
}

/// The PHC string of `password` under a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()?).map_err(PasswordError::Hash)?;
    let hash = hasher()
        .hash_password(password.as_bytes(), &salt)
        .map_err(PasswordError::Hash)?;
    Ok(hash.to_string())
}

/// Whether `password` matches the PHC string `phc` (false for a malformed one).
pub fn verify_password(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(hash) => hasher().verify_password(password.as_bytes(), &hash).is_ok(),
        Err(_) => false,
    }
}

/// Runs one verification of `password` against a hash no password matches, taking the time a real
/// verification takes.
pub fn verify_dummy(password: &str) {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| {
        // A random password, so that no input matches; a fixed salt is fine for a hash never
        // compared to a real one.
        let secret = random_bytes::<16>()
            .map(|b| super::session::hex(&b))
            .unwrap_or_else(|_| "floodgate-dummy-password".to_owned());
        match SaltString::encode_b64(b"floodgate-dummy!") {
            Ok(salt) => hasher()
                .hash_password(secret.as_bytes(), &salt)
                .map(|h| h.to_string())
                .unwrap_or_default(),
            Err(_) => String::new(),
        }
    });
    let _ = verify_password(password, dummy);
}

/// Checks that `username` has 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
pub fn validate_username(username: &str) -> Result<(), AppError> {
    if username.is_empty() || username.len() > MAX_USERNAME_LEN {
        return Err(AppError::field("username", "must have 1 to 64 characters"));
    }
    if !username
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(AppError::field(
            "username",
            "may contain only letters, digits, '.', '_' and '-'",
        ));
    }
    Ok(())
}

/// Checks that `password`, the value of `field`, has at least 12 characters and at most 1024 bytes.
pub fn validate_password(field: &str, password: &str) -> Result<(), AppError> {
    if password.chars().count() < MIN_PASSWORD_LEN {
        return Err(AppError::field(field, "must be at least 12 characters"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(AppError::field(field, "must be at most 1024 bytes"));
    }
    Ok(())
}

/// A new random password: 20 characters of lowercase letters and digits (no `l`, `o`, `0`, `1`).
pub fn generate_password() -> Result<String, RandomError> {
    let bytes = random_bytes::<GENERATED_LEN>()?;
    Ok(bytes
        .iter()
        .map(|b| char::from(GENERATED_ALPHABET[usize::from(b & 31)]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_then_verify() {
        let phc = hash_password("correct horse battery").unwrap();
        assert!(phc.starts_with("$argon2id$v=19$"));
        assert!(verify_password("correct horse battery", &phc));
        assert!(!verify_password("correct horse batterx", &phc));
        assert!(!verify_password("anything", "not a phc string"));
        let again = hash_password("correct horse battery").unwrap();
        assert_ne!(phc, again, "each hash has its own salt");
    }

    #[test]
    fn usernames() {
        assert!(validate_username("alice.b-c_9").is_ok());
        assert!(validate_username("").is_err());
        assert!(validate_username(&"a".repeat(65)).is_err());
        assert!(validate_username(&"a".repeat(64)).is_ok());
        assert!(validate_username("a b").is_err());
        assert!(validate_username("é").is_err());
    }

    #[test]
    fn passwords() {
        assert!(validate_password("password", "12345678901").is_err());
        assert!(validate_password("password", "123456789012").is_ok());
        assert!(validate_password("password", &"x".repeat(1025)).is_err());
    }

    #[test]
    fn generated_passwords_are_long_enough_and_differ() {
        let a = generate_password().unwrap();
        assert_eq!(a.len(), 20);
        assert!(validate_password("password", &a).is_ok());
        assert_ne!(a, generate_password().unwrap());
    }
}
