//! Fair shares (`shares.rs`): per-key counts behind striped locks. A key
//! never holds more than its share, however takers race; a place given back
//! is free again at once; a key's entry is removed when its count reaches
//! zero and made again by the next take; and every place comes back.
//!
//! The locks are `sync::Mutex` (loom's here), so loom explores every order
//! in which takers and givers reach a stripe.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{model, race_point};
use sessionreg::shares::{ShareFull, Shares};

const KEY: u8 = 7;

/// Two takers race for a key's last place: exactly one gets it, the other
/// hears `ShareFull`; the winner's place is counted once, and given back
/// when it is dropped (the key's entry then removed).
///
/// Fails if the count were read and written in two steps (both would win).
#[test]
fn two_takers_at_the_limit_one_wins() {
    model(|| {
        let shares = Arc::new(Shares::<u8>::new(1).unwrap());
        let other = {
            let shares = shares.clone();
            thread::spawn(move || shares.take(&KEY))
        };
        race_point();
        let mine = shares.take(&KEY);
        let theirs = other.join().unwrap();
        let won = usize::from(mine.is_ok()) + usize::from(theirs.is_ok());
        assert_eq!(won, 1, "exactly one taker holds the place");
        for refused in [mine.as_ref().err(), theirs.as_ref().err()]
            .into_iter()
            .flatten()
        {
            assert_eq!(*refused, ShareFull { limit: 1 });
        }
        assert_eq!(shares.held(&KEY), 1);
        drop((mine, theirs));
        assert_eq!(shares.held(&KEY), 0);
        assert_eq!(shares.keys(), 0, "no entry is kept for a key with no place");
    });
}

/// A place given back while another taker asks for it: the taker gets it
/// exactly when the give-back came first, and the count is never off by
/// one either way.
#[test]
fn a_place_given_back_races_a_take() {
    model(|| {
        let shares = Arc::new(Shares::<u8>::new(1).unwrap());
        let held = shares.take(&KEY).unwrap();
        let giver = thread::spawn(move || drop(held));
        race_point();
        let taken = shares.take(&KEY);
        giver.join().unwrap();
        // Whoever won, the count says what is held now.
        assert_eq!(shares.held(&KEY), usize::from(taken.is_ok()));
        drop(taken);
        assert_eq!(shares.keys(), 0);
        assert!(shares.take(&KEY).is_ok(), "the place is free in the end");
    });
}

/// A key's count goes to zero (its entry removed) and back up, on one
/// thread, while another takes and gives back a place of the same key: the
/// entry is made again by whichever take comes after the removal, never
/// lost, never counted twice.
#[test]
fn an_entry_removed_at_zero_is_made_again() {
    model(|| {
        let shares = Arc::new(Shares::<u8>::new(2).unwrap());
        let other = {
            let shares = shares.clone();
            thread::spawn(move || {
                let share = shares.take(&KEY).expect("two places, two takers");
                drop(share);
            })
        };
        race_point();
        let first = shares.take(&KEY).expect("two places, two takers");
        drop(first);
        let again = shares.take(&KEY).expect("two places, two takers");
        other.join().unwrap();
        assert_eq!(shares.held(&KEY), 1);
        assert_eq!(shares.keys(), 1);
        drop(again);
        assert_eq!(shares.keys(), 0);
    });
}
