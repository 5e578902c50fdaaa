//! A role's timers, named by an enum instead of bare `TimerId(n)` constants.
//!
//! `timers!` declares the enum with a fixed id per timer (the ids a runtime journals
//! and re-arms, so they are part of a checkpoint's format and must not be renumbered),
//! converts it into a [`meridian_core::TimerId`] for `Ctx::set_timer` and
//! `Ctx::cancel_timer`, and back with `of`, so a role's `on_timer` matches on names
//! and the compiler sees every timer it handles.

/// Declares a role's timers: `timers! { pub(super) enum Timer { Read = 1, Vote = 2, } }`.
macro_rules! timers {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $v:ident = $n:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vm])* $v = $n,)+
        }

        impl From<$name> for meridian_core::TimerId {
            fn from(t: $name) -> Self {
                meridian_core::TimerId(t as u64)
            }
        }

        impl $name {
            /// Every timer of this role, in id order (what a client cancels when its
            /// transaction ends).
            #[allow(dead_code)]
            $vis const ALL: &'static [$name] = &[$($name::$v,)+];

            /// The timer `id` names, if it is one of this role's.
            #[allow(dead_code)]
            $vis fn of(id: meridian_core::TimerId) -> Option<Self> {
                match id.0 {
                    $($n => Some($name::$v),)+
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use timers;

#[cfg(test)]
mod tests {
    timers! {
        enum T {
            A = 1,
            B = 7,
        }
    }

    #[test]
    fn a_timer_goes_to_its_id_and_back() {
        use meridian_core::TimerId;
        assert_eq!(TimerId::from(T::B), TimerId(7));
        assert_eq!(T::of(TimerId(1)), Some(T::A));
        assert_eq!(T::of(TimerId(7)), Some(T::B));
        assert_eq!(T::of(TimerId(2)), None);
        assert_eq!(T::ALL, &[T::A, T::B]);
    }
}
