//! Hand-driven tests.
