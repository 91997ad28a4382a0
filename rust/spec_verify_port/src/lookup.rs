//! Prompt lookup (CONTRACT.md section 4): `PromptLookupDraft(max_ngram, min_ngram).propose`.

use crate::error::{fail, ErrorCode, SvResult};

/// Checks `k >= 0`, `min_ngram >= 1`, `max_ngram >= min_ngram`.
pub fn validate_lookup(k: i64, max_ngram: i64, min_ngram: i64) -> SvResult<()> {
    if k < 0 {
        return fail(ErrorCode::BadParam, format!("k={k}: must be >= 0"));
    }
    if min_ngram < 1 {
        return fail(
            ErrorCode::BadParam,
            format!("min_ngram={min_ngram}: must be >= 1"),
        );
    }
    if max_ngram < min_ngram {
        return fail(
            ErrorCode::BadParam,
            format!("max_ngram={max_ngram}: must be >= min_ngram = {min_ngram}"),
        );
    }
    Ok(())
}

/// The draft for `ctx`: for `n` from `min(max_ngram, len - 1)` down to `min_ngram`, the last
/// `n` ids' most recent earlier occurrence `s` (`s < len - n`, largest first) gives
/// `ctx[s + n .. s + n + k]`; the first `n` that matches wins; otherwise (or `k == 0`) empty.
///
/// Planted bug `bug_lookup_oldest`: the oldest occurrence (smallest `s`) wins instead.
pub fn prompt_lookup(ctx: &[i64], k: usize, max_ngram: usize, min_ngram: usize) -> Vec<i64> {
    let len = ctx.len();
    if k == 0 || len < 2 {
        return Vec::new();
    }
    let longest = max_ngram.min(len - 1);
    if longest < min_ngram {
        return Vec::new();
    }
    for n in (min_ngram..=longest).rev() {
        let suffix = &ctx[len - n..];
        let matches = |s: &usize| &ctx[*s..*s + n] == suffix;
        #[cfg(not(feature = "bug_lookup_oldest"))]
        let found = (0..len - n).rev().find(matches);
        #[cfg(feature = "bug_lookup_oldest")]
        let found = (0..len - n).find(matches);
        if let Some(s) = found {
            let end = (s + n).saturating_add(k).min(len);
            return ctx[s + n..end].to_vec();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_example() {
        // 9 1 2 never occurred earlier; 1 2 occurred at the start, followed by 3 9 1.
        assert_eq!(prompt_lookup(&[1, 2, 3, 9, 1, 2], 3, 3, 1), vec![3, 9, 1]);
    }

    #[test]
    fn most_recent_occurrence_wins() {
        // "5" occurs at 0 (followed by 6) and at 2 (followed by 7): the most recent is 2.
        assert_eq!(prompt_lookup(&[5, 6, 5, 7, 5], 1, 3, 1), vec![7]);
    }

    #[test]
    fn longest_ngram_first() {
        // 1-gram "2" last occurred at 3 (followed by 9); the 2-gram "1 2" at 0 (followed by 3).
        assert_eq!(prompt_lookup(&[1, 2, 3, 2, 9, 1, 2], 1, 2, 1), vec![3]);
        assert_eq!(prompt_lookup(&[1, 2, 3, 2, 9, 1, 2], 1, 1, 1), vec![9]);
    }

    #[test]
    fn at_most_k_and_short_at_the_end() {
        assert_eq!(prompt_lookup(&[1, 2, 3, 9, 1, 2], 1, 3, 1), vec![3]);
        assert_eq!(
            prompt_lookup(&[1, 2, 3, 9, 1, 2], 100, 3, 1),
            vec![3, 9, 1, 2]
        );
        assert_eq!(prompt_lookup(&[4, 4], 5, 3, 1), vec![4]);
    }

    #[test]
    fn empty_cases() {
        assert!(prompt_lookup(&[1, 2, 3, 9, 1, 2], 0, 3, 1).is_empty());
        assert!(prompt_lookup(&[1, 2, 3], 3, 3, 1).is_empty());
        assert!(prompt_lookup(&[], 3, 3, 1).is_empty());
        assert!(prompt_lookup(&[7], 3, 3, 1).is_empty());
        // min_ngram above what the context allows
        assert!(prompt_lookup(&[1, 2, 1, 2], 3, 5, 4).is_empty());
    }

    #[test]
    fn validation() {
        assert!(validate_lookup(0, 3, 1).is_ok());
        assert_eq!(
            validate_lookup(-1, 3, 1).unwrap_err().code,
            ErrorCode::BadParam
        );
        assert_eq!(
            validate_lookup(1, 3, 0).unwrap_err().code,
            ErrorCode::BadParam
        );
        assert_eq!(
            validate_lookup(1, 1, 2).unwrap_err().code,
            ErrorCode::BadParam
        );
    }
}
