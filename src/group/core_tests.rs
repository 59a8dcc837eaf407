//! Unit tests of the group coordinator's core (membership and offsets)
//! with a fake clock: no broker, no glommio.
