/*!
The sites' work in parallel, for the in-process simulations (the CLI's `cape djica`, `cape nn`,
`cape fm`, `cape efpsn`, `cape bench`): one task per site on rayon's current pool when the crate's
`parallel` feature is on, a plain sequential loop otherwise (the browser build, where a tab is one
site anyway).

What keeps the results identical whatever the thread count:
- each task gets its site's index and touches only that site's state (its own seeded RNG lives in
  the site; no RNG is shared between tasks);
- the results come back as a `Vec` in site order, and every reduction over them (sums, means,
  the aggregator's steps) is done by the caller afterwards, sequentially, in that order;
- a kernel inside a task stays sequential (faer runs with `Par::Seq`), so a site's numbers do not
  depend on how many threads it could have had.

The pool is rayon's global one unless the caller installs another (`cape --threads N` builds the
global pool once; tests compare 1 and 4 threads with `ThreadPool::install`).
*/

/// `f(s, &items[s])` for every site `s`, in parallel when the `parallel` feature is on; the
/// results in site order.
pub fn map_sites<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync + Send,
{
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.par_iter().enumerate().map(|(s, item)| f(s, item)).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        items.iter().enumerate().map(|(s, item)| f(s, item)).collect()
    }
}

/// `f(s, &mut items[s])` for every site `s`, in parallel when the `parallel` feature is on; the
/// results in site order. Each task has its own site mutably (its RNG, its buffers).
pub fn map_sites_mut<T, R, F>(items: &mut [T], f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(usize, &mut T) -> R + Sync + Send,
{
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.par_iter_mut().enumerate().map(|(s, item)| f(s, item)).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        items.iter_mut().enumerate().map(|(s, item)| f(s, item)).collect()
    }
}

/// `f(i)` for `i` in `0..n`, in parallel when the `parallel` feature is on; the results in order.
pub fn map_indices<R, F>(n: usize, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(usize) -> R + Sync + Send,
{
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..n).into_par_iter().map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        (0..n).map(f).collect()
    }
}

/// The threads the sites' work may use here: the current rayon pool's size, or 1 without the
/// `parallel` feature.
pub fn threads() -> usize {
    #[cfg(feature = "parallel")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "parallel"))]
    {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_site_order() {
        let items: Vec<u64> = (0..100).collect();
        assert_eq!(map_sites(&items, |s, &x| (s as u64) * 1000 + x)[37], 37_037);
        let mut items = items;
        let out = map_sites_mut(&mut items, |s, x| {
            *x += 1;
            s
        });
        assert_eq!(out, (0..100).collect::<Vec<_>>());
        assert_eq!(items[99], 100);
        assert_eq!(map_indices(5, |i| i * i), vec![0, 1, 4, 9, 16]);
        assert!(threads() >= 1);
    }
}
