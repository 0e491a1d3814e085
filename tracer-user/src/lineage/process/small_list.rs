//! A list that keeps one element in place and spills to a `Vec` past that.
//!
//! Most processes have one thread, one lineage entry and at most one exec. A `Vec` of each
//! would allocate (with room for four) per record; a million records would spend hundreds of
//! megabytes on those buffers and on the allocator's headers around them.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// Up to one element in place, more in a `Vec`; reads as a slice.
#[derive(Clone, PartialEq, Eq)]
pub struct SmallList<T>(Repr<T>);

#[derive(Clone, PartialEq, Eq)]
enum Repr<T> {
    Empty,
    One(T),
    Many(Vec<T>),
}

impl<T> SmallList<T> {
    /// An empty list (allocates nothing).
    pub const fn new() -> Self {
        SmallList(Repr::Empty)
    }

    /// A list of `first` alone (allocates nothing).
    pub const fn one(first: T) -> Self {
        SmallList(Repr::One(first))
    }

    /// Appends `v`; the second element moves both to a `Vec`.
    pub fn push(&mut self, v: T) {
        self.0 = match std::mem::replace(&mut self.0, Repr::Empty) {
            Repr::Empty => Repr::One(v),
            Repr::One(first) => Repr::Many(vec![first, v]),
            Repr::Many(mut all) => {
                all.push(v);
                Repr::Many(all)
            }
        };
    }
}

impl<T> SmallList<T> {
    /// Removes and returns the last element.
    pub fn pop(&mut self) -> Option<T> {
        match std::mem::replace(&mut self.0, Repr::Empty) {
            Repr::Empty => None,
            Repr::One(v) => Some(v),
            Repr::Many(mut all) => {
                let last = all.pop();
                self.0 = Repr::Many(all);
                last
            }
        }
    }
}

impl<T> Default for SmallList<T> {
    fn default() -> Self {
        SmallList::new()
    }
}

impl<T> Deref for SmallList<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Empty => &[],
            Repr::One(v) => std::slice::from_ref(v),
            Repr::Many(all) => all,
        }
    }
}

impl<T> DerefMut for SmallList<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.0 {
            Repr::Empty => &mut [],
            Repr::One(v) => std::slice::from_mut(v),
            Repr::Many(all) => all,
        }
    }
}

impl<'a, T> IntoIterator for &'a SmallList<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut SmallList<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T> From<Vec<T>> for SmallList<T> {
    fn from(mut v: Vec<T>) -> Self {
        match v.len() {
            0 => SmallList::new(),
            1 => SmallList::one(v.remove(0)),
            _ => SmallList(Repr::Many(v)),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for SmallList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for SmallList<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == other[..]
    }
}

#[cfg(test)]
mod tests {
    use super::SmallList;

    #[test]
    fn keeps_order_through_the_spill() {
        let mut l = SmallList::new();
        assert!(l.is_empty());
        for i in 0..5 {
            l.push(i);
            assert_eq!(l.len(), i + 1);
        }
        assert_eq!(l, vec![0, 1, 2, 3, 4]);
        l[0] = 9;
        assert_eq!(l.first(), Some(&9));
        assert_eq!(SmallList::from(vec![7]), SmallList::one(7));
        assert_eq!(format!("{:?}", SmallList::one(1)), "[1]");
    }
}
