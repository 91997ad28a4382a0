//! Tree verification (CONTRACT.md section 6): `verify_tree`.
//!
//! Draft node `i` carries `token_ids[i]` below `parents[i]` (`-1` the root, else an earlier
//! node); `target_logits` has `n + 1` rows (root first). Rules: with replacement (SpecInfer),
//! without replacement (recursive rejection sampling: the draft renormalised without each
//! rejected token), greedy (the longest path agreeing with the argmax), typical (Medusa's lossy
//! rule). Draw order: per child `u_accept` then `u_resample`, always both; the first kept child
//! becomes the current node; the last child's `u_resample` picks the residual's token when every
//! child is rejected; a node without children ends with one bonus draw. Greedy draws nothing;
//! typical draws one uniform, for its last token.

use crate::error::{fail, ErrorCode, SvResult};
use crate::sampling::{
    argmax, check_logits_row, distribution_unchecked, sample_with, sequential_sum, validate_ids,
    SamplingParams,
};
use crate::verify::{residual, DRAFT_ROW_TOLERANCE};

/// `SV_TREE_WITH_REPLACEMENT`: siblings drawn i.i.d. from the node's draft row.
pub const RULE_WITH_REPLACEMENT: i32 = 0;
/// `SV_TREE_WITHOUT_REPLACEMENT`: siblings drawn without replacement (distinct).
pub const RULE_WITHOUT_REPLACEMENT: i32 = 1;
/// `SV_TREE_TYPICAL`: Medusa's typical acceptance (lossy).
pub const RULE_TYPICAL: i32 = 2;

/// Whether a node's child may extend a greedy or typical path: `(node, path, child)`.
type PathTest<'a> = dyn Fn(i64, &[i64], usize) -> SvResult<bool> + 'a;

/// The outcome of one tree round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeVerified {
    /// The kept path's tokens and one more.
    pub emitted: Vec<i64>,
    /// The kept path's node indices from the root down.
    pub nodes: Vec<i64>,
}

fn node_name(node: i64) -> String {
    if node < 0 {
        "the root".to_string()
    } else {
        format!("node {node}")
    }
}

/// Children of each node in index order; index 0 is the root, `i + 1` node `i`.
fn validate_layout(
    parents: &[i64],
    token_ids: &[i64],
    v: usize,
    distinct: bool,
) -> SvResult<Vec<Vec<usize>>> {
    let n = parents.len();
    if token_ids.len() != n {
        return fail(
            ErrorCode::Shape,
            format!(
                "token_ids: has {} entries; parents has {n}",
                token_ids.len()
            ),
        );
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (i, &parent) in parents.iter().enumerate() {
        let i64i = i as i64;
        if parent == i64i {
            return fail(
                ErrorCode::Shape,
                format!("parents: node {i} is its own parent (a cycle)"),
            );
        }
        if parent > i64i && parent < n as i64 {
            return fail(
                ErrorCode::Shape,
                format!(
                    "parents: node {i} has parent {parent}, which comes after it; parents must \
                 come before their children (a topological order)"
                ),
            );
        }
        if parent < -1 || parent >= n as i64 {
            return fail(
                ErrorCode::Shape,
                format!(
                    "parents: node {i} is an orphan: its parent {parent} is not a node (nodes are \
                 0..{}, -1 is the root)",
                    n as i64 - 1
                ),
            );
        }
        children[(parent + 1) as usize].push(i);
    }
    for (i, &t) in token_ids.iter().enumerate() {
        if t < 0 || t >= v as i64 {
            return fail(
                ErrorCode::IdRange,
                format!("token_ids: node {i} has token {t}; ids are integers in [0, {v})"),
            );
        }
    }
    if distinct {
        for (index, kids) in children.iter().enumerate() {
            for (a, &first) in kids.iter().enumerate() {
                if let Some(&second) = kids[a + 1..]
                    .iter()
                    .find(|&&c| token_ids[c] == token_ids[first])
                {
                    return fail(
                        ErrorCode::Shape,
                        format!(
                        "token_ids: nodes {first} and {second} (children of {}) both carry token \
                         {}; drafts drawn without replacement are distinct",
                        node_name(index as i64 - 1), token_ids[first]),
                    );
                }
            }
        }
    }
    Ok(children)
}

fn check_tree_probs(
    q: &[f64],
    present: &[bool],
    children: &[Vec<usize>],
    token_ids: &[i64],
    v: usize,
    without: bool,
) -> SvResult<()> {
    for (index, kids) in children.iter().enumerate() {
        if kids.is_empty() || !present[index] {
            continue;
        }
        let where_ = format!("entry {index} ({})", node_name(index as i64 - 1));
        let row = &q[index * v..(index + 1) * v];
        if let Some(t) = row.iter().position(|x| !x.is_finite() || *x < 0.0) {
            return fail(
                ErrorCode::Distribution,
                format!(
                "draft_probs: {where_} has {:?} at id {t}; probabilities must be finite and >= 0",
                row[t]),
            );
        }
        let total = sequential_sum(row);
        if (total - 1.0).abs() > DRAFT_ROW_TOLERANCE {
            return fail(
                ErrorCode::Distribution,
                format!("draft_probs: {where_} sums to {total:?}; a distribution sums to 1"),
            );
        }
        for &child in kids {
            let x = token_ids[child] as usize;
            if row[x] <= 0.0 {
                return fail(
                    ErrorCode::ZeroDraftProb,
                    format!(
                    "draft_probs: {where_} gives node {child}'s token {x} probability 0; a draft \
                     can only propose tokens it could draw"),
                );
            }
        }
        let support = row.iter().filter(|&&x| x != 0.0).count();
        if without && kids.len() > support {
            return fail(
                ErrorCode::Distribution,
                format!(
                    "draft_probs: {where_} has {support} tokens with q > 0 for {} children drawn \
                 without replacement",
                    kids.len()
                ),
            );
        }
    }
    Ok(())
}

/// Medusa's threshold `min(epsilon, delta * exp(-H(p)))`, `H` summed left to right with libm.
pub fn typical_threshold(p: &[f64], epsilon: f64, delta: f64) -> f64 {
    let mut entropy = 0.0;
    for &x in p {
        if x > 0.0 {
            entropy -= x * x.ln();
        }
    }
    epsilon.min(delta * (-entropy).exp())
}

/// The draft renormalised without `x` (sequential sum).
fn without_token(q: &[f64], x: usize) -> Vec<f64> {
    let mut out = q.to_vec();
    out[x] = 0.0;
    let total = sequential_sum(&out);
    if total > 0.0 {
        for value in out.iter_mut() {
            *value /= total;
        }
    }
    out
}

/// `verify_tree(target_logits, parents, token_ids, draft_probs, p, history, rng, prompt, rule)`.
///
/// `draft_probs` is `(n + 1) * v` row-major (root first) or `None`; `present[i]` says whether
/// row `i` is given (`false`: that node's children are deterministic, one-hot `q`).
#[allow(clippy::too_many_arguments)] // the contract's verify_tree takes these
pub fn verify_tree<F>(
    target_logits: &[f64],
    v: usize,
    parents: &[i64],
    token_ids: &[i64],
    draft_probs: Option<(&[f64], &[bool])>,
    rule: i32,
    epsilon: f64,
    delta: f64,
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
    mut uniform: F,
) -> SvResult<TreeVerified>
where
    F: FnMut() -> SvResult<f64>,
{
    p.validate()?;
    if !(RULE_WITH_REPLACEMENT..=RULE_TYPICAL).contains(&rule) {
        return fail(
            ErrorCode::BadParam,
            format!("rule={rule}: must be 0 (with replacement), 1 (without) or 2 (typical)"),
        );
    }
    if rule == RULE_TYPICAL
        && !(epsilon.is_finite() && epsilon >= 0.0 && delta.is_finite() && delta >= 0.0)
    {
        return fail(
            ErrorCode::BadParam,
            format!("epsilon={epsilon:?}, delta={delta:?}: must be finite numbers >= 0"),
        );
    }
    let n = parents.len();
    if v == 0 {
        return fail(ErrorCode::Shape, "V: must be >= 1");
    }
    if (n + 1) * v != target_logits.len() {
        return fail(
            ErrorCode::Shape,
            format!(
                "target_logits: has {} values; it must be (n + 1) * V = ({n} + 1) * {v}",
                target_logits.len()
            ),
        );
    }
    let without = rule == RULE_WITHOUT_REPLACEMENT && !p.is_greedy();
    let children = validate_layout(parents, token_ids, v, without)?;
    if let Some(i) = target_logits.iter().position(|x| x.is_nan()) {
        return fail(
            ErrorCode::Nan,
            format!(
                "target_logits: row {} ({}) has NaN at id {}",
                i / v,
                node_name((i / v) as i64 - 1),
                i % v
            ),
        );
    }
    for (i, row) in target_logits.chunks_exact(v).enumerate() {
        check_logits_row(&format!("target_logits row {i}"), row)?;
    }
    validate_ids("history", history, v)?;
    validate_ids("prompt", prompt, v)?;
    let sampled = !p.is_greedy() && rule != RULE_TYPICAL;
    if sampled {
        if let Some((q, present)) = draft_probs {
            if q.len() != (n + 1) * v || present.len() != n + 1 {
                return fail(
                    ErrorCode::Shape,
                    format!(
                        "draft_probs: has {} values; it must be (n + 1) * V = ({n} + 1) * {v}",
                        q.len()
                    ),
                );
            }
            check_tree_probs(q, present, &children, token_ids, v, without)?;
        }
    }
    let rows: Vec<&[f64]> = target_logits.chunks_exact(v).collect();
    let dist = |node: i64, path: &[i64]| -> SvResult<Vec<f64>> {
        let mut seen = history.to_vec();
        seen.extend_from_slice(path);
        distribution_unchecked(rows[(node + 1) as usize], p, &seen, prompt)
    };

    if p.is_greedy() || rule == RULE_TYPICAL {
        // the longest passing path, ties to the path branching to the lower index first
        fn best(
            node: i64,
            path: &mut Vec<i64>,
            children: &[Vec<usize>],
            token_ids: &[i64],
            passes: &PathTest,
        ) -> SvResult<Vec<i64>> {
            let mut found: Vec<i64> = Vec::new();
            for &child in &children[(node + 1) as usize] {
                if passes(node, path, child)? {
                    path.push(token_ids[child]);
                    let below = best(child as i64, path, children, token_ids, passes)?;
                    path.pop();
                    if below.len() + 1 > found.len() {
                        found = std::iter::once(child as i64).chain(below).collect();
                    }
                }
            }
            Ok(found)
        }
        let greedy = p.is_greedy();
        let passes = |node: i64, path: &[i64], child: usize| -> SvResult<bool> {
            let row = dist(node, path)?;
            let x = token_ids[child] as usize;
            Ok(if greedy {
                x == argmax(&row)
            } else {
                row[x] > typical_threshold(&row, epsilon, delta)
            })
        };
        let nodes = best(-1, &mut Vec::new(), &children, token_ids, &passes)?;
        let path: Vec<i64> = nodes.iter().map(|&i| token_ids[i as usize]).collect();
        let last = dist(*nodes.last().unwrap_or(&-1), &path)?;
        let token = if greedy {
            argmax(&last)
        } else {
            sample_with(&last, uniform()?)
        };
        let mut emitted = path;
        emitted.push(token as i64);
        return Ok(TreeVerified { emitted, nodes });
    }

    let (q_all, present) = match draft_probs {
        Some((q, present)) => (Some(q), present.to_vec()),
        None => (None, vec![false; n + 1]),
    };
    let mut node: i64 = -1;
    let mut kept: Vec<i64> = Vec::new();
    let mut nodes: Vec<i64> = Vec::new();
    loop {
        let mut r = dist(node, &kept)?;
        let index = (node + 1) as usize;
        let kids = &children[index];
        if kids.is_empty() {
            let token = sample_with(&r, uniform()?);
            kept.push(token as i64);
            return Ok(TreeVerified {
                emitted: kept,
                nodes,
            });
        }
        let mut q: Option<Vec<f64>> = match q_all {
            Some(all) if present[index] => Some(all[index * v..(index + 1) * v].to_vec()),
            _ => None,
        };
        let mut moved = false;
        for (j, &child) in kids.iter().enumerate() {
            let x = token_ids[child] as usize;
            let q_j: Vec<f64> = match &q {
                Some(row) => row.clone(),
                None => {
                    let mut e = vec![0.0; v];
                    e[x] = 1.0;
                    e
                }
            };
            let u_accept = uniform()?;
            let u_resample = uniform()?;
            if u_accept * q_j[x] < r[x] {
                kept.push(x as i64);
                nodes.push(child as i64);
                node = child as i64;
                moved = true;
                break;
            }
            // Planted bug `bug_tree_stale_residual`: the residual is not updated after a
            // sibling is rejected (only the last child's rejection updates it).
            #[cfg(not(feature = "bug_tree_stale_residual"))]
            let update = true;
            #[cfg(feature = "bug_tree_stale_residual")]
            let update = j == kids.len() - 1;
            if update {
                if let Some(next) = residual(&r, &q_j) {
                    r = next;
                }
            }
            if j == kids.len() - 1 {
                kept.push(sample_with(&r, u_resample) as i64);
                return Ok(TreeVerified {
                    emitted: kept,
                    nodes,
                });
            }
            if rule == RULE_WITHOUT_REPLACEMENT {
                if let Some(row) = &q {
                    q = Some(without_token(row, x));
                }
            }
        }
        debug_assert!(moved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ln_rows(rows: &[&[f64]]) -> Vec<f64> {
        rows.iter()
            .flat_map(|r| {
                r.iter()
                    .map(|&w| if w > 0.0 { w.ln() } else { f64::NEG_INFINITY })
            })
            .collect()
    }

    fn run(rule: i32, uniforms: &[f64]) -> (TreeVerified, usize) {
        // CONTRACT.md section 6's hand example
        let logits = ln_rows(&[&[0.0, 0.5, 0.5], &[1.0 / 3.0; 3], &[0.0, 0.0, 1.0]]);
        let q = [0.5, 1.0 / 3.0, 1.0 / 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let present = [true, false, false];
        let mut i = 0;
        let out = verify_tree(
            &logits,
            3,
            &[-1, -1],
            &[0, 1],
            Some((&q, &present)),
            rule,
            0.09,
            0.3,
            &SamplingParams::default(),
            &[],
            &[],
            || {
                i += 1;
                Ok(uniforms[i - 1])
            },
        )
        .unwrap();
        (out, i)
    }

    #[test]
    fn hand_examples() {
        let (out, drawn) = run(RULE_WITH_REPLACEMENT, &[0.5, 0.9, 0.7, 0.5, 0.2]);
        assert_eq!((out.emitted, out.nodes, drawn), (vec![1, 2], vec![1], 5));
        let (out, drawn) = run(RULE_WITHOUT_REPLACEMENT, &[0.5, 0.9, 0.7, 0.3]);
        assert_eq!((out.emitted, out.nodes, drawn), (vec![2], vec![], 4));
    }

    #[test]
    fn greedy_longest_path() {
        let logits = [0.0, 5.0, 0.0, 9.0, 0.0, 0.0, 0.0, 0.0, 7.0, 3.0, 0.0, 0.0];
        let out = verify_tree(
            &logits,
            3,
            &[-1, -1, 1],
            &[1, 1, 2],
            None,
            0,
            0.09,
            0.3,
            &SamplingParams::greedy(),
            &[],
            &[],
            || fail(ErrorCode::BadParam, "greedy drew a uniform"),
        )
        .unwrap();
        assert_eq!((out.emitted, out.nodes), (vec![1, 2, 0], vec![1, 2]));
    }

    #[test]
    fn bad_layouts_name_the_node() {
        let logits = [0.0; 12];
        let err = verify_tree(
            &logits,
            3,
            &[-1, 2, 0],
            &[0, 1, 2],
            None,
            0,
            0.09,
            0.3,
            &SamplingParams::default(),
            &[],
            &[],
            || Ok(0.5),
        )
        .unwrap_err();
        assert!(
            err.message.contains("node 1 has parent 2"),
            "{}",
            err.message
        );
        let err = verify_tree(
            &logits,
            3,
            &[-1, 0, 0],
            &[0, 1, 1],
            None,
            1,
            0.09,
            0.3,
            &SamplingParams::default(),
            &[],
            &[],
            || Ok(0.5),
        )
        .unwrap_err();
        assert!(err.message.contains("nodes 1 and 2"), "{}", err.message);
    }
}
