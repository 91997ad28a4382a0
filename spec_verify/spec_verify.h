/*
 * spec_verify.h -- the spec-verify C ABI, version 2.
 *
 * A port of the speculative-decoding contract (reference/CONTRACT.md) exports these functions
 * from a shared library; the harness loads it as `ffi:path/to/lib.so` and gates it (contract,
 * greedy, exact, parity, statistical tiers). The Rust port in rust/spec_verify_port implements
 * it; any other language can, as long as it keeps the symbols, types and rules below.
 *
 * Conventions
 * -----------
 * - Every function except sv_abi_version, sv_last_error and sv_status_name returns an int32_t
 *   status: SV_OK (0) or one of the negative SV_E_* codes below. On error the out-parameters
 *   hold unspecified values (never read them) and sv_last_error() says what went wrong.
 * - Arrays are plain, contiguous, row-major. An array argument paired with a length n may be
 *   NULL when n == 0; otherwise NULL is SV_E_NULL (and a pointer not aligned for its element
 *   type is SV_E_SHAPE). Lengths are int64_t; a negative length is SV_E_SHAPE. Input arrays
 *   are only read; output arrays are written only on SV_OK.
 * - Token ids are int64_t and must lie in [0, V) wherever a vocabulary size V is given
 *   (SV_E_ID_RANGE otherwise). Prompt lookup has no V and accepts any int64_t id.
 * - All arithmetic is IEEE-754 binary64 ("double"). The softmax's normaliser S, the
 *   renormalisation after top-p/min-p and the residual's Z are lane sums (CONTRACT.md 2.5):
 *   lane l in [0, 1024) adds ids l, l + 1024, l + 2048, ... left to right, then the 1024 lane
 *   totals are added in lane order (for V <= 1024: the sequential sum). The inverse CDF's
 *   running sum and top-p's walk are sequential, left to right. exp is any double-precision
 *   exp within one ulp of the exact value (the C library's exp; the reference uses numpy's
 *   np.exp), so probabilities match the reference within a few ulps, not bit for bit: the
 *   parity tier compares distributions within 4 ulps and decisions exactly except at a
 *   boundary tie (a comparison within 2^-46 of flipping; CONTRACT.md section 3), which it
 *   reports.
 * - The library keeps no global mutable state apart from the thread-local error message;
 *   every function is safe to call from several threads at once (the parity tier's
 *   thread_safety check makes the same calls alone and on 4 threads at once).
 * - No call ever unwinds or aborts across this boundary: an internal failure (a bug in the
 *   port) returns SV_E_INTERNAL.
 *
 * Validation order: when several rules are broken, a call reports the first failing check in
 * this order (the reference's): SV_E_NULL and SV_E_SHAPE (pointers, lengths), SV_E_BAD_PARAM
 * (sampling or lookup parameters), SV_E_BUFFER (output capacity), SV_E_NAN (logits),
 * SV_E_ID_RANGE (draft ids, then history, then prompt), SV_E_DISTRIBUTION and
 * SV_E_ZERO_DRAFT_PROB (draft_probs, row by row), then SV_E_NAN for a logit that overflows
 * (row by row; row i with history + x_1..x_i, the only history it is ever computed with).
 * All of these are checked before the first uniform is drawn: a call that fails draws
 * nothing. Only SV_E_CALLBACK can happen after draws began.
 */
#ifndef SPEC_VERIFY_H
#define SPEC_VERIFY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. A loader must compare sv_abi_version() with it and
 * refuse a library that reports another number: any change to a signature, a struct layout,
 * a status code or a documented rule bumps it. */
#define SV_ABI_VERSION 2

/* ---- Status codes ------------------------------------------------------------------------ */

#define SV_OK                  0   /* success */
#define SV_E_SHAPE            -1   /* a length is negative or inconsistent: V < 1, m < 0,
                                      n_history < 0, n_prompt < 0, n_ctx < 0, n < 0, or
                                      (m + 1) * V overflows */
#define SV_E_ID_RANGE         -2   /* a token id (draft_ids, history, prompt, x) not in [0, V) */
#define SV_E_NAN              -3   /* logits hold NaN or +inf, a row has no finite entry (every
                                      token banned), or a finite logit overflows to +-inf under
                                      the penalties or the temperature (CONTRACT.md section 2:
                                      e.g. 1.0 / 1e-310); never a NaN distribution */
#define SV_E_ZERO_DRAFT_PROB  -4   /* draft_probs gives a drafted token x_i probability 0
                                      (q_i(x_i) <= 0): a draft can only propose what it draws */
#define SV_E_BAD_PARAM        -5   /* a sampling parameter out of its range (see
                                      sv_sampling_params), or a lookup parameter (k < 0,
                                      min_ngram < 1, max_ngram < min_ngram) */
#define SV_E_BUFFER           -6   /* out_capacity too small for the largest possible output */
#define SV_E_CALLBACK         -7   /* the uniform callback returned a value outside [0, 1)
                                      (NaN included); a callback signals its own failure
                                      (e.g. a host-language exception) by returning -1.0 */
#define SV_E_DISTRIBUTION     -8   /* a probability vector that is negative, non-finite, or
                                      (draft_probs rows) does not sum to 1 within 1e-6, or
                                      (sv_sample) has no positive entry */
#define SV_E_NULL             -9   /* a required pointer is NULL */
#define SV_E_INTERNAL       -100   /* the port failed internally (a caught panic): a bug in the
                                      port, never in the caller's input */

/* ---- Version and errors ------------------------------------------------------------------ */

/* The ABI version the library implements: SV_ABI_VERSION (2) for this header. Version 2
 * (issue 14): S, the renormalisation and Z are lane sums instead of sequential sums; a
 * version 1 library differs from the reference by more than the parity tolerance at V > 1024. */
uint32_t sv_abi_version(void);

/* The message of the most recent failing call on the calling thread: names the argument, its
 * value where short, and the rule (e.g. "draft_probs: row 1 sums to 0.5; each row must sum to
 * 1 within 1e-6"). Every call except sv_abi_version, sv_last_error and sv_status_name clears
 * it to "" first. The pointer stays valid until the next call on the same thread; copy it.
 * Never NULL; UTF-8, NUL-terminated. */
const char* sv_last_error(void);

/* The name of a status code as a static string ("SV_OK", "SV_E_SHAPE", ...);
 * "SV_E_UNKNOWN" for a number that is not a code. Never NULL. */
const char* sv_status_name(int32_t status);

/* ---- Sampling parameters ----------------------------------------------------------------- */

/* CONTRACT.md section 2's SamplingParams without the generation-only fields (max_tokens, stop,
 * seed). Every field must be finite; the valid ranges (else SV_E_BAD_PARAM) are:
 *   temperature         >= 0     (0 is greedy: argmax, ties to the lowest id, no uniform)
 *   top_k               >= 0     (0 is off; top_k >= V is off too)
 *   top_p               in (0, 1] (1 is off)
 *   min_p               in [0, 1] (0 is off)
 *   repetition_penalty  > 0      (1 is off)
 *   presence_penalty    any finite (0 is off)
 *   frequency_penalty   any finite (0 is off)
 * Layout: seven 8-byte fields in this order, no padding (56 bytes). */
typedef struct sv_sampling_params {
    double  temperature;
    int64_t top_k;
    double  top_p;
    double  min_p;
    double  repetition_penalty;
    double  presence_penalty;
    double  frequency_penalty;
} sv_sampling_params;

/* ---- Uniform source ---------------------------------------------------------------------- */

/* A uniform source: each call returns the next uniform in [0, 1) of the caller's stream.
 * ctx is passed through untouched. The library calls it only from the calling thread and only
 * during the call it was passed to, and never after an error. Returning anything outside
 * [0, 1) (NaN, -1.0, 1.0, ...) makes the call fail with SV_E_CALLBACK. */
typedef double (*sv_uniform_fn)(void* ctx);

/* ---- PCG32 (CONTRACT.md section 1) ------------------------------------------------------- */

/* The first n outputs of Pcg32(initstate, initseq), seeded like pcg32_srandom_r, as uint32.
 * out: n writable uint32_t (may be NULL when n == 0).
 * Errors: SV_E_SHAPE (n < 0), SV_E_NULL. */
int32_t sv_pcg32_u32(uint64_t initstate, uint64_t initseq, int64_t n, uint32_t* out);

/* The first n uniforms of Pcg32(initstate, initseq): next_u32() * 2^-32, each in [0, 1).
 * request_rng(seed) is initstate = seed, initseq = 54 (REQUEST_STREAM).
 * out: n writable doubles (may be NULL when n == 0).
 * Errors: SV_E_SHAPE (n < 0), SV_E_NULL. */
int32_t sv_pcg32_uniforms(uint64_t initstate, uint64_t initseq, int64_t n, double* out);

/* ---- Sampling (CONTRACT.md section 2) ---------------------------------------------------- */

/* The target's sampling distribution for one row of logits: penalties, then greedy one-hot
 * (temperature 0) or temperature, top-k, softmax, top-p, min-p, renormalisation, exactly in
 * CONTRACT.md's order and tie rules.
 *
 * logits     V doubles, finite or -inf (NaN or +inf: SV_E_NAN; all -inf: SV_E_NAN; a
 *            finite logit that the penalties or the temperature overflow: SV_E_NAN).
 * V          vocabulary size, >= 1.
 * params     sampling parameters (not NULL).
 * history    n_history generated ids in [0, V): what the presence and frequency penalties see
 *            (with the prompt, what the repetition penalty sees). May be NULL if n_history == 0.
 * prompt     n_prompt prompt ids in [0, V): seen by the repetition penalty only.
 * out_probs  V writable doubles: the distribution (sums to 1; one-hot when temperature == 0).
 * Errors: SV_E_NULL, SV_E_SHAPE, SV_E_BAD_PARAM, SV_E_ID_RANGE, SV_E_NAN. */
int32_t sv_sampling_distribution(const double* logits, int64_t V,
                                 const sv_sampling_params* params,
                                 const int64_t* history, int64_t n_history,
                                 const int64_t* prompt, int64_t n_prompt,
                                 double* out_probs);

/* Inverse-CDF sampling with a given uniform u: the first id whose sequential cumulative sum
 * exceeds u (u < c[id]); if rounding leaves none, the highest id with dist[id] > 0.
 * dist: V finite, non-negative doubles with at least one positive (else SV_E_DISTRIBUTION);
 * it need not sum to 1 exactly. u must be in [0, 1) (else SV_E_BAD_PARAM).
 * out_id: the sampled id.
 * Errors: SV_E_NULL, SV_E_SHAPE, SV_E_BAD_PARAM, SV_E_DISTRIBUTION. */
int32_t sv_sample(const double* dist, int64_t V, double u, int64_t* out_id);

/* ---- Verification (CONTRACT.md section 3) ------------------------------------------------ */

/* One verified position (the rejection step): accept x iff u_accept * q[x] < p[x]; otherwise
 * the token is sv_sample(d / Z, u_resample) with d = max(0, p - q) and Z its lane sum,
 * or sv_sample(p, u_resample) if Z == 0.
 * p, q: V probabilities each (finite, non-negative: else SV_E_DISTRIBUTION; p needs a positive
 * entry); q[x] must be > 0 (else SV_E_ZERO_DRAFT_PROB). u_accept, u_resample in [0, 1) (else
 * SV_E_BAD_PARAM). Outputs: out_token, and out_accepted = 1 if x was kept, else 0.
 * Errors: SV_E_NULL, SV_E_SHAPE, SV_E_BAD_PARAM, SV_E_ID_RANGE, SV_E_DISTRIBUTION,
 * SV_E_ZERO_DRAFT_PROB. */
int32_t sv_speculative_step(const double* p, const double* q, int64_t V, int64_t x,
                            double u_accept, double u_resample,
                            int64_t* out_token, int32_t* out_accepted);

/* verify_draft: keep a prefix x_1..x_n of the m drafted tokens and emit one more token of the
 * target's own (the replacement at the first rejection, or the bonus after m keeps).
 *
 * target_logits  (m + 1) * V doubles, row-major: row i is the target's logits after the
 *                context and x_1..x_i (row 0: after the context). No NaN, no +inf, and every
 *                row needs a finite entry (else SV_E_NAN).
 * m              number of drafted tokens, >= 0 (m == 0: only the bonus row).
 * V              vocabulary size, >= 1.
 * draft_ids      m ids in [0, V) (may be NULL if m == 0).
 * draft_probs    m * V doubles, row-major: row i is the distribution q_i that x_i was drawn
 *                from (finite, non-negative, each row sums to 1 within 1e-6: else
 *                SV_E_DISTRIBUTION; q_i(x_i) > 0: else SV_E_ZERO_DRAFT_PROB). NULL means a
 *                deterministic draft: q_i is one-hot on x_i. Ignored (not read, not checked)
 *                when params->temperature == 0.
 * params         sampling parameters (not NULL); temperature == 0 is greedy verification.
 * history        n_history ids in [0, V) generated before this round. Row i's distribution
 *                p_i = sv_sampling_distribution(row i, params, history + x_1..x_i, prompt):
 *                the penalties see the drafts kept so far this round.
 * prompt         n_prompt ids in [0, V) (the repetition penalty sees them).
 * uniform        the uniform source, called with uniform_ctx; or NULL to draw from the
 *                contract's request stream request_rng(pcg_seed) = Pcg32(pcg_seed, 54),
 *                started afresh for this call.
 * uniform_ctx    passed to uniform untouched (may be NULL).
 * pcg_seed       the request seed, used only when uniform == NULL.
 * out_ids        out_capacity writable int64_t; receives the *out_n_emitted emitted ids.
 * out_capacity   must be >= m + 1 (the longest possible output), else SV_E_BUFFER, checked
 *                before anything is drawn.
 * out_n_emitted  receives the number of emitted ids, n + 1 (1 <= it <= m + 1).
 * out_n_accepted receives n, the number of drafts kept (0 <= n <= m).
 *
 * Draw order (the parity tier checks it; CONTRACT.md section 3, seed section 2.5):
 *   - greedy (temperature == 0): no uniform is ever drawn; keep x_i while it equals the
 *     argmax of p_i (ties to the lowest id); at the first mismatch emit that argmax and stop;
 *     after m keeps emit the argmax of row m.
 *   - sampled: for i = 0, 1, ...: draw u_accept, then u_resample -- always both, whether or
 *     not x_i is accepted -- then the rejection step (sv_speculative_step); stop at the first
 *     rejection, emitting the replacement. After m keeps, draw exactly one more uniform for
 *     the bonus: sv_sample(p_m, u). A round therefore draws 2 * (n + 1) uniforms when a draft
 *     is rejected and 2 * m + 1 when all m are kept.
 *
 * Errors: SV_E_NULL, SV_E_SHAPE, SV_E_BAD_PARAM, SV_E_BUFFER, SV_E_ID_RANGE,
 * SV_E_DISTRIBUTION, SV_E_ZERO_DRAFT_PROB, SV_E_NAN (all before any draw: every row's
 * overflow included), SV_E_CALLBACK (a uniform outside [0, 1), at that draw). */
int32_t sv_verify_draft(const double* target_logits, int64_t m, int64_t V,
                        const int64_t* draft_ids, const double* draft_probs,
                        const sv_sampling_params* params,
                        const int64_t* history, int64_t n_history,
                        const int64_t* prompt, int64_t n_prompt,
                        sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,
                        int64_t* out_ids, int64_t out_capacity,
                        int64_t* out_n_emitted, int64_t* out_n_accepted);

/* ---- Tree verification (CONTRACT.md section 6): an OPTIONAL symbol --------------------- */

/* A library that exports sv_verify_tree is still ABI version 2: the function is optional.
 * Loaders look the symbol up (dlsym) and check trees only when it is there; a library
 * without it is accepted as before (chains only). */
#define SV_TREE_WITH_REPLACEMENT     0   /* siblings drawn i.i.d. from the node's draft row */
#define SV_TREE_WITHOUT_REPLACEMENT  1   /* siblings drawn without replacement (distinct) */
#define SV_TREE_TYPICAL              2   /* Medusa's typical acceptance (lossy) */

/* verify_tree: keep a path of a draft tree and emit one more token of the target's own.
 *
 * n              number of draft nodes, >= 0. Node i carries token_ids[i] and hangs below
 *                parents[i]: -1 (the root: the context) or an earlier node (parents[i] < i);
 *                else SV_E_SHAPE naming the node (a cycle, a parent after its child, an
 *                orphan). Token ids in [0, V), else SV_E_ID_RANGE.
 * target_logits  (n + 1) * V doubles, row-major: row 0 after the context, row i + 1 after the
 *                path root -> node i (no NaN/+inf, a finite entry per row: else SV_E_NAN).
 * draft_probs    (n + 1) * V doubles (row 0: the distribution the root's children were drawn
 *                from; row i + 1: node i's children's), or NULL (every node's children
 *                deterministic: one-hot q per child). Not read when greedy or typical.
 * draft_present  n + 1 flags (0: that row is absent, its children deterministic), or NULL
 *                (every row present). Present rows of nodes with children: finite,
 *                non-negative, summing to 1 within 1e-6 (else SV_E_DISTRIBUTION), giving each
 *                child's token q > 0 (else SV_E_ZERO_DRAFT_PROB).
 * rule           SV_TREE_*; else SV_E_BAD_PARAM. Without replacement, siblings must carry
 *                distinct tokens (else SV_E_SHAPE) and a present row needs at least as many
 *                tokens with q > 0 as the node has children (else SV_E_DISTRIBUTION).
 * epsilon, delta the typical rule's thresholds (finite, >= 0; read only for SV_TREE_TYPICAL).
 * params, history, prompt, uniform, uniform_ctx, pcg_seed: as for sv_verify_draft; the
 *                penalties of a node's row see history + the tokens on the path to it.
 * out_ids        out_capacity writable int64_t: the kept path's tokens and one more.
 * out_nodes      out_capacity writable int64_t: the kept path's node indices, root down.
 * out_capacity   >= n + 1, else SV_E_BUFFER (before anything is drawn).
 * out_n_emitted  receives the number of emitted ids (the path has one node fewer).
 *
 * Rules and draw order (CONTRACT.md section 6): at the current node, per child in index order
 * draw u_accept then u_resample, always both; keep the child iff u_accept * q_j(x) < r(x),
 * where r starts as the node's row p and, after each rejection, becomes max(0, r - q_j) / Z
 * (Z a lane sum, as in sv_verify_draft; r unchanged if Z == 0); q_j is the node's row (with
 * replacement), that row without the tokens rejected before divided by its sequential sum
 * (without replacement), or one-hot (deterministic). The first kept child becomes the current
 * node; if every child is rejected emit sv_sample(r, u_resample of the last child), so at most
 * 2n + 1 uniforms are drawn. A node without children ends with one uniform:
 * sv_sample(its row, u). Greedy (temperature == 0): the longest path whose every token is its
 * parent row's argmax (ties to the path branching to the lower index first), then the argmax;
 * no uniform. Typical: the longest path whose every token x has
 * p(x) > min(epsilon, delta * exp(-H(p))) at its parent (H summed left to right, natural log),
 * then one uniform for sv_sample of the last kept node's row.
 *
 * Errors: SV_E_NULL, SV_E_SHAPE, SV_E_BAD_PARAM, SV_E_BUFFER, SV_E_ID_RANGE, SV_E_NAN,
 * SV_E_DISTRIBUTION, SV_E_ZERO_DRAFT_PROB (all before any draw), SV_E_CALLBACK. */
int32_t sv_verify_tree(const double* target_logits, int64_t n, int64_t V,
                       const int64_t* parents, const int64_t* token_ids,
                       const double* draft_probs, const uint8_t* draft_present,
                       int32_t rule, double epsilon, double delta,
                       const sv_sampling_params* params,
                       const int64_t* history, int64_t n_history,
                       const int64_t* prompt, int64_t n_prompt,
                       sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,
                       int64_t* out_ids, int64_t* out_nodes, int64_t out_capacity,
                       int64_t* out_n_emitted);

/* ---- Prompt lookup (CONTRACT.md section 4) ----------------------------------------------- */

/* PromptLookupDraft(max_ngram, min_ngram).propose(ctx, k): for n from
 * min(max_ngram, n_ctx - 1) down to min_ngram, take the last n ids of ctx and find their most
 * recent earlier occurrence (start s < n_ctx - n, largest s first); the first n that matches
 * gives the draft ctx[s + n : s + n + k] (at most k ids; fewer at the end of ctx). No match,
 * or k == 0, gives an empty draft. Deterministic: no uniform, no draft distribution.
 *
 * ctx          n_ctx ids (any int64_t values; may be NULL if n_ctx == 0).
 * k            the most ids to propose, >= 0.
 * max_ngram    the longest n-gram tried, >= min_ngram.
 * min_ngram    the shortest n-gram tried, >= 1.
 * out_ids      out_capacity writable int64_t; receives *out_n ids.
 * out_capacity must be >= min(k, n_ctx) (the longest possible draft), else SV_E_BUFFER.
 * out_n        receives the draft length, 0 <= *out_n <= min(k, n_ctx - 1).
 * Errors: SV_E_NULL, SV_E_SHAPE, SV_E_BAD_PARAM, SV_E_BUFFER. */
int32_t sv_prompt_lookup(const int64_t* ctx, int64_t n_ctx, int64_t k,
                         int64_t max_ngram, int64_t min_ngram,
                         int64_t* out_ids, int64_t out_capacity, int64_t* out_n);

/* ---- Other chain rules (CONTRACT.md sections 8, 9): OPTIONAL symbols ------------------- */

/* sv_verify_draft's arguments, outputs and errors, another rule's decisions and draw order:
 * block verification (section 8: eta_1..eta_m, then one uniform for the added token, m + 1
 * draws whatever is kept) and sampler-match (section 9: one uniform per reached position,
 * the target's own sample there, a mismatch emits it and stops; n_accepted + 1 draws).
 * A library exporting them is still ABI version 2; `spec-verify check --rule block` (or
 * sampler_match) checks the symbol, and SV_CAP_VERIFY_BLOCK / SV_CAP_VERIFY_SAMPLER_MATCH
 * must agree with exporting it (else the library is refused). */
int32_t sv_verify_block(const double* target_logits, int64_t m, int64_t V,
                        const int64_t* draft_ids, const double* draft_probs,
                        const sv_sampling_params* params,
                        const int64_t* history, int64_t n_history,
                        const int64_t* prompt, int64_t n_prompt,
                        sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,
                        int64_t* out_ids, int64_t out_capacity,
                        int64_t* out_n_emitted, int64_t* out_n_accepted);
int32_t sv_verify_sampler_match(const double* target_logits, int64_t m, int64_t V,
                                const int64_t* draft_ids, const double* draft_probs,
                                const sv_sampling_params* params,
                                const int64_t* history, int64_t n_history,
                                const int64_t* prompt, int64_t n_prompt,
                                sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,
                                int64_t* out_ids, int64_t out_capacity,
                                int64_t* out_n_emitted, int64_t* out_n_accepted);

/* ---- Drafting on the library's own stream (CONTRACT.md section 14): an OPTIONAL symbol -- */

/* propose_and_verify: draw the k drafts from the draft's logits, then verify them by the token
 * rule (sv_verify_draft), all from one uniform source: the round an engine runs on its own
 * generator, the draft's sampling included. A library exporting it is still ABI version 2;
 * SV_CAP_PROPOSE_AND_VERIFY must agree with exporting it (else the library is refused), and
 * `spec-verify check` then runs statistical/own_stream.* on it.
 *
 * target_logits  (k + 1) * V doubles, row-major, as sv_verify_draft's (row i after x_1..x_i).
 * draft_logits   k * V doubles, row-major: row i the draft's logits for the (i + 1)-th draft.
 *                No NaN, no +inf, a finite entry per row (else SV_E_NAN).
 * k              number of drafts, >= 0 (k == 0: only the bonus row).
 * V              vocabulary size, >= 1.
 * params         the target's sampling parameters (not NULL), as sv_verify_draft's.
 * draft_params   the draft's processors, or NULL for params. Draft i is drawn from
 *                q_i = sv_sampling_distribution(draft_logits row i, draft_params,
 *                history + x_1..x_{i-1}, prompt) by sv_sample; a greedy draft_params
 *                (temperature 0) proposes the argmax and draws nothing for it, and the round
 *                is verified as a deterministic draft (one-hot q_i); else q_1..q_k are the
 *                draft rows of the verification.
 * history, prompt, uniform, uniform_ctx, pcg_seed, out_ids, out_capacity (>= k + 1),
 * out_n_emitted, out_n_accepted: as for sv_verify_draft.
 *
 * Draw order: the library's own. The harness checks only the law of what a round emits
 * (continued with the target to k + 1 tokens, against the target's joint law), on the
 * library's request_rng(pcg_seed) stream. The Rust port draws the k drafts first (one uniform
 * each, none when the draft is greedy), then sv_verify_draft's uniforms, every uniform used
 * once. Drawing a draft with a uniform the verification then uses again (the draft's noise
 * in the acceptance test's slot: vLLM PR #47386, fixed in #54282) breaks the law.
 *
 * Errors: sv_verify_draft's (SV_E_BAD_PARAM naming draft_params.<field> for the draft's
 * processors), all before any draw except SV_E_CALLBACK and the SV_E_NAN of a row that
 * overflows under the penalties only with the drafts drawn in this call. */
int32_t sv_propose_and_verify(const double* target_logits, const double* draft_logits,
                              int64_t k, int64_t V,
                              const sv_sampling_params* params,
                              const sv_sampling_params* draft_params,
                              const int64_t* history, int64_t n_history,
                              const int64_t* prompt, int64_t n_prompt,
                              sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,
                              int64_t* out_ids, int64_t out_capacity,
                              int64_t* out_n_emitted, int64_t* out_n_accepted);

/* ---- Declared capabilities: an OPTIONAL symbol ----------------------------------------- */

/* A library may say what it offers; one that exports sv_capabilities is still ABI version 2,
 * and one that does not is checked on everything its symbols offer. The answer is a bitwise
 * OR of SV_CAP_*: a bit that is set declares the capability, a clear bit declares it absent
 * (its checks are then NOT APPLICABLE, never failed). Bits unknown to a harness are ignored.
 * A library whose sv_verify_draft draws from its own generator rather than `uniform` clears
 * SV_CAP_INJECTED_UNIFORMS (the exact tier, parity and the edge uniforms then do not apply:
 * `spec-verify check --profile lossless`); one without a greedy path clears SV_CAP_GREEDY;
 * SV_CAP_VERIFY_TREE, SV_CAP_VERIFY_BLOCK, SV_CAP_VERIFY_SAMPLER_MATCH and
 * SV_CAP_PROPOSE_AND_VERIFY must each agree with exporting its symbol (else the library is
 * refused, naming the bit and the symbol).
 * The command line (--capability / --no-capability) overrides what is declared here. */
#define SV_CAP_INJECTED_UNIFORMS      (1u << 0)
#define SV_CAP_GREEDY                 (1u << 1)
#define SV_CAP_SAMPLING_DISTRIBUTION  (1u << 2)
#define SV_CAP_PROMPT_LOOKUP          (1u << 3)
#define SV_CAP_PCG32                  (1u << 4)
#define SV_CAP_VERIFY_TREE            (1u << 5)
#define SV_CAP_FLOAT32                (1u << 6)  /* float32 arithmetic (informational) */
#define SV_CAP_VERIFY_BLOCK           (1u << 8)  /* exports sv_verify_block */
#define SV_CAP_VERIFY_SAMPLER_MATCH   (1u << 9)  /* exports sv_verify_sampler_match */
#define SV_CAP_PROPOSE_AND_VERIFY     (1u << 10) /* exports sv_propose_and_verify */
uint32_t sv_capabilities(void);

#ifdef __cplusplus
}
#endif

#endif /* SPEC_VERIFY_H */
