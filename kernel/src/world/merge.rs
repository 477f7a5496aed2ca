//! Merging sorted runs into one sorted sequence. A checkpoint's shards each hold their
//! documents in path order, and the shard of a path is a hash of it, so the shards
//! interleave. The index is built from the merged order in one bulk pass: a million
//! scattered inserts into a large map cost a cache miss per comparison, and leave its
//! nodes a third empty.

/// The items of `runs`, each sorted by `key`, in ascending order of key; of equal keys the
/// one of the lower run comes first. A tournament (loser) tree of run indices: each item
/// moves once and costs one comparison per level of the tree, and a run's buffer is freed
/// as soon as it is spent.
pub(crate) struct SortedMerge<T, F> {
    runs: Vec<std::vec::IntoIter<T>>,
    /// The next item of each run; None once the run is spent (it then loses to every run).
    heads: Vec<Option<T>>,
    /// `tree[0]` is the run whose head is least; `tree[i]`, for `i` in `1..runs.len()`,
    /// the loser of the match at node `i`, whose children are nodes `2i` and `2i + 1`
    /// (node `runs.len() + r` being run `r` itself).
    tree: Vec<usize>,
    key: F,
}

impl<T, F: Fn(&T) -> &str> SortedMerge<T, F> {
    pub fn new(runs: Vec<Vec<T>>, key: F) -> SortedMerge<T, F> {
        let mut runs: Vec<std::vec::IntoIter<T>> = runs.into_iter().map(Vec::into_iter).collect();
        let heads: Vec<Option<T>> = runs.iter_mut().map(Iterator::next).collect();
        let tree = vec![0; runs.len()];
        let mut merge = SortedMerge { runs, heads, tree, key };
        if !merge.runs.is_empty() {
            merge.tree[0] = merge.play(1);
        }
        merge
    }

    /// Whether run `a`'s head goes before run `b`'s.
    fn before(&self, a: usize, b: usize) -> bool {
        match (&self.heads[a], &self.heads[b]) {
            (Some(x), Some(y)) => ((self.key)(x), a) < ((self.key)(y), b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => a < b,
        }
    }

    /// Plays the matches below `node`, records their losers, and returns the winner.
    fn play(&mut self, node: usize) -> usize {
        let k = self.runs.len();
        if node >= k {
            return node - k;
        }
        let (left, right) = (self.play(2 * node), self.play(2 * node + 1));
        let (winner, loser) = if self.before(left, right) { (left, right) } else { (right, left) };
        self.tree[node] = loser;
        winner
    }
}

impl<T, F: Fn(&T) -> &str> Iterator for SortedMerge<T, F> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let mut winner = *self.tree.first()?;
        let item = self.heads[winner].take()?;
        self.heads[winner] = self.runs[winner].next();
        if self.heads[winner].is_none() {
            self.runs[winner] = Vec::new().into_iter();
        }
        // Replay the matches on the way from the run's leaf to the root.
        let mut node = (self.runs.len() + winner) / 2;
        while node >= 1 {
            if self.before(self.tree[node], winner) {
                std::mem::swap(&mut self.tree[node], &mut winner);
            }
            node /= 2;
        }
        self.tree[0] = winner;
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(runs: Vec<Vec<&'static str>>) -> Vec<&'static str> {
        SortedMerge::new(runs, |s: &&str| s).collect()
    }

    #[test]
    fn sorted_runs_merge_into_one_sorted_order() {
        let runs = vec![vec!["/b", "/e", "/f"], vec![], vec!["/a", "/c"], vec!["/d", "/g", "/h", "/i"]];
        assert_eq!(merged(runs), vec!["/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h", "/i"]);
    }

    #[test]
    fn equal_keys_come_lower_run_first() {
        let runs = vec![vec!["/a"], vec!["/a"], vec!["/a", "/b"]];
        let out: Vec<(usize, &str)> =
            SortedMerge::new(vec![vec![(0, "/a")], vec![(1, "/a")], vec![(2, "/a"), (2, "/b")]], |p| p.1)
                .collect();
        assert_eq!(out, vec![(0, "/a"), (1, "/a"), (2, "/a"), (2, "/b")]);
        assert_eq!(merged(runs).len(), 4);
    }

    #[test]
    fn an_unsorted_run_comes_out_unsorted() {
        // The merge does not sort; whoever builds from it checks the order.
        assert_eq!(merged(vec![vec!["/b", "/a"]]), vec!["/b", "/a"]);
    }

    #[test]
    fn any_number_of_runs_merges_in_order() {
        for k in 1..=9 {
            let runs: Vec<Vec<String>> =
                (0..k).map(|r| (0..(r % 4) * 3).map(|i| format!("/{:03}", i * k + r)).collect()).collect();
            let mut all: Vec<String> = runs.iter().flatten().cloned().collect();
            all.sort();
            let out: Vec<String> = SortedMerge::new(runs, |s: &String| s.as_str()).collect();
            assert_eq!(out, all, "{k} runs");
        }
    }

    #[test]
    fn no_runs_merge_into_nothing() {
        assert!(merged(vec![]).is_empty());
        assert!(merged(vec![vec![], vec![]]).is_empty());
    }
}
