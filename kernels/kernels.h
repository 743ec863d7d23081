/* kernels/kernels.h — the CUDA lane's launch geometry: the chips it targets and the facts about its kernels that the
 * lane's shim reads (how many rows a GEMV takes, how a projection's block is shaped, how an attention is cut into
 * blocks). The kernels themselves come later; they must then agree with every value here, so each constant and
 * function states the kernel fact it stands for.
 *
 * Everything here is a plain function of its arguments: no state, no allocation. */
#ifndef FUSECHECK_KERNELS_H
#define FUSECHECK_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"
#include "shim/shim.h"

/* ── Kernel constants ────────────────────────────────────────────────────────────────────────────────────── */

/* The most activation rows one GEMV launch takes. The GEMV keeps a partial sum per activation row and per output row
 * of its warp in registers; at eight rows (times four output rows a warp) that is 32 accumulators a lane, the most it
 * keeps without spilling. Past eight rows each weight is reused enough that the tensor-core GEMM wins. */
#define KERNELS_GEMV_ROWS 8

/* Values in one quantization block: one int8 word a value shares a scale with 31 others. A warp's 32 lanes hold one
 * block, and its scale is one warp max-reduction. Checkpoint q8_0 rows use the same block. */
#define KERNELS_QBLOCK 32

/* The most products one launch takes as parts (a GEMM or a GEMV over outputs side by side). The launch's parameter
 * block carries one weight pointer and one output pointer a part: a layer's query, key, value and gate. */
#define KERNELS_GEMM_PARTS 4

/* Output columns in one tile of the tensor-core GEMM: four warps of 32 columns each. A part of a GEMM in parts must be
 * whole tiles, so that no tile straddles two parts' weights. */
#define KERNELS_GEMM_TILE_N 128

/* The widest head the rotation epilogue turns: a warp takes one head, each lane four pairs (one value from each half
 * of the rotated width per pair), so 32 lanes x 4 pairs x 2 values = 256. */
#define KERNELS_ROPE_HEAD 256

/* The most values one thread of a norm holds in registers while its block sums their squares and scales them. */
#define KERNELS_NORM_VALUES_A_THREAD 8

/* The most cached rows an attention block stages in shared memory at a time (one tile of keys and of values);
 * fewer where the chip's shared memory a block does not hold that many (kernels_attn_tile_rows). */
#define KERNELS_ATTN_TILE_ROWS 64

/* The attention kernel's (kc_attention_chunk's) static __shared__ bytes, which its tile leaves of a block's shared
 * memory: a tile's logits, KERNELS_ATTN_TILE_ROWS floats (kernels.cu declares them this size; the simulated device
 * charges each launch its own kernel's static bytes and test_sim holds the attention's to this). */
#define KERNELS_ATTN_STATIC_SMEM (KERNELS_ATTN_TILE_ROWS * 4)

/* The most key/value heads one attention block takes (its warps are split among them). */
#define KERNELS_ATTN_MAX_HEADS 4

/* The fewest cached rows one chunk of a split attention takes: shorter chunks cost more in the merge of their partial
 * softmaxes than they win in parallelism. */
#define KERNELS_ATTN_SPLIT_ROWS 256

/* A GEMV takes four output rows a warp only for products at least this wide (fewer warps must still fill the chip)
 * and at most this deep (each lane keeps the four rows' block scales of its slice of the row in registers). */
#define KERNELS_ROWS_A_WARP_MIN_N 4096
#define KERNELS_ROWS_A_WARP_MAX_K 8192

/* Output values one block of the decode mixture's down projection writes. */
#define KERNELS_MOE_DOWN_OUTS 32

/* ── Chips ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A chip the lane targets: its short name (as shim names spell it), its label, its streaming multiprocessors, the
 * most shared memory one block may use (KiB, the opt-in limit), and its memory bandwidth (GB/s). */
struct kernels_chip {
    const char *name;
    const char *label;
    int32_t sms;
    int32_t smem_kib;
    int32_t bandwidth_gbs;
};

/* Number of chips in the table, the i-th (NULL out of range), and the one named `name` (NULL when unknown). */
int kernels_chip_count(void);
const struct kernels_chip *kernels_chip_get(int i);
const struct kernels_chip *kernels_chip_find(const char *name);

/* ── Activations and their numerics ──────────────────────────────────────────────────────────────────────── */

/* How the lane's products take their activations: enum suffix, knob name, int8 words a value (0: dequantized
 * weights times f32 activations). */
#define KERNELS_ACTS(X) \
    X(DEQUANT, "dequant", 0) \
    X(INT8, "int8", 1) \
    X(INT8X2, "int8x2", 2)

enum kernels_acts {
#define X(e, s, w) KERNELS_ACTS_##e,
    KERNELS_ACTS(X)
#undef X
    KERNELS_ACTS_COUNT
};

/* The knob name of an activation mode, its lookup (-1 when unknown), and its int8 words a value. */
const char *kernels_acts_name(enum kernels_acts a);
int kernels_acts_lookup(const char *s);
int kernels_acts_words(enum kernels_acts a);

/* How a launch multiplies: f32 fused multiply-adds over dequantized weights, or int8 dot products of one or two
 * words a value. */
enum kernels_mode { KERNELS_MODE_F32, KERNELS_MODE_I8, KERNELS_MODE_I8X2 };

/* The multiply mode of an activation mode. */
enum kernels_mode kernels_mode(enum kernels_acts a);

/* A mode's accumulators: their width, whether they are integers, the most products one sums without overflow
 * (INT64_MAX when it cannot overflow), and the bytes a cached key or value takes staged in shared memory. */
struct kernels_accumulator {
    int bits;
    bool integer;
    int64_t terms;
    int stage_bytes;
};
struct kernels_accumulator kernels_accumulator(enum kernels_mode m);

/* ── Geometry ────────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether the GEMV unpacks checkpoint rows of format f in registers (the 4-bit and k-quant block formats). */
bool kernels_decodes(enum ir_format f);

/* Output rows one warp of a GEMV takes for an m-row product (k in, n out) by checkpoint rows of format f: four for a
 * wide, shallow product in a block format within the GEMV's rows, one otherwise. */
int kernels_rows_a_warp(enum ir_format f, int64_t n, int64_t k, int64_t m);

/* Threads of the norm kernel's block for rows of `cols` values: enough for the row at KERNELS_NORM_VALUES_A_THREAD
 * values a thread, whole warps, one warp at least and 1024 at most. */
int64_t kernels_norm_threads(int64_t cols);

/* Threads of a block-format GEMV's block: eight warps of one output row each, or four warps of four. */
int64_t kernels_gemv_blk_norm_threads(int per_warp);

/* Threads of a gated delta rule's block (a block a value head, a thread a value column of its memory): whole warps
 * covering the head's dv columns, 1024 at most (a thread then takes columns j, j + threads, ...). */
int64_t kernels_gdn_threads(int64_t dv);

/* Whether a block of `threads` threads holds a norm of `cols` values in its registers (the last block of a projection
 * norms the whole row it wrote). */
bool kernels_block_holds_its_norm(int64_t threads, int64_t cols);

/* The decode mixture's down projection: its blocks, threads a block (a warp for each kept expert and one for a folded
 * shared expert) and the shared memory staging the experts' hidden rows. */
struct kernels_moe_down {
    int64_t blocks;
    int64_t threads;
    int64_t smem_bytes;
};
/* The launch for a mixture of width d whose k kept experts are dff wide, with a shared expert sdff wide (0: none). */
struct kernels_moe_down kernels_moe_down_launch(int64_t d, int64_t dff, int64_t k, int64_t sdff);

/* The cached rows an attention over `len` rows attends: the last `window` of them (0: every row). */
int64_t kernels_attended_span(int64_t len, int64_t window);

/* Key/value heads one attention block takes: as many as the block's shared memory (smem_bytes) stages — per head a
 * tile of cached keys (hd) and values (vd) at stage_bytes a value, and each of its `group` query heads' query and
 * output rows in f32 — at most KERNELS_ATTN_MAX_HEADS; 0 when not even one head fits. */
int64_t kernels_attn_heads_per_block(int64_t group, int64_t hd, int64_t vd, int64_t span, int64_t smem_bytes,
                                     int stage_bytes);

/* The rows of one tile of the device's attention (kc_attention_chunk) on a chip giving smem_bytes of shared memory
 * a block, for heads hd wide and values vd wide: the most, a power of two up to KERNELS_ATTN_TILE_ROWS (1 at least),
 * whose dynamic shared memory (kernels_attn_smem) leaves KERNELS_ATTN_STATIC_SMEM bytes of it. The host lane walks
 * the same tiles. (Finding F36: a fixed 64 rows asked 146 KiB for tiny-deepseek's 320-wide heads, over the 99 KiB
 * of rtx4090 and l40s.) */
int64_t kernels_attn_tile_rows(int64_t smem_bytes, int64_t hd, int64_t vd);
/* The dynamic shared memory of the device's attention block with tiles of `rows` rows: the query and the output
 * accumulators, and a tile of rows max(hd, vd) wide and another vd wide (values regrouped by thread), f32. */
int64_t kernels_attn_smem(int64_t rows, int64_t hd, int64_t vd);

/* Chunks an attention's span is cut into so that `head_blocks` blocks of heads fill a chip of `sms` multiprocessors
 * (two blocks each), no chunk shorter than KERNELS_ATTN_SPLIT_ROWS: 1 when the heads alone fill it. */
int64_t kernels_attn_splits(int64_t head_blocks, int64_t span, int32_t sms);

/* Whether a per-head product of m rows (a in, b out a head) runs in tensor-core tiles in mode `mode`. */
bool kernels_head_gemm_in_tiles(enum kernels_mode mode, int64_t m, int64_t a, int64_t b);

/* Whether an attention of `rows` query rows, heads hd wide and values vd wide, runs in tensor-core tiles. */
bool kernels_attention_in_tiles(enum kernels_mode mode, int64_t rows, int64_t hd, int64_t vd);

/* ── The host lane (kernels/host.c) ──────────────────────────────────────────────────────────────────────── */

/* A lane operating point: the chip, the activation mode, and how caches and recurrent state are held. */
struct kernels_point {
    const struct kernels_chip *chip;
    enum kernels_acts acts;
    enum shim_keep cache, state;
};
/* The operating point of a `cuda-lane:` shim; -1 with err for any other shim. */
int kernels_point_of(const struct shim *s, struct kernels_point *out, char err[IR_ERR_LEN]);

/* Faults a test plants in the host lane to see the tolerance run catch them (never set outside tests). */
#define KERNELS_FAULTS(X) \
    X(NONE, "none") \
    X(SCALE_STEP, "scale_step")  /* a quantized block's scale one step too large, and products reading the next */ \
                                 /* block's words */ \
    X(GEMV_ROW, "gemv_row")      /* a GEMV block's last output reads the weights of the row before it */ \
    X(DROP_F16, "drop_f16")      /* cache writes keep f32 values instead of rounding them to the cache's type */ \
    X(SPLIT_MAX, "split_max")    /* a split attention's merge takes its last chunk's max to be its first's */ \
    X(ROPE_PAIR, "rope_pair")    /* the rotation turns the other pairing's pairs: (2i, 2i+1) for (i, i+half) */ \
                                 /* and the reverse */ \
    X(CONV_TAP, "conv_tap")      /* the causal convolution takes each channel's taps in reverse order */ \
    X(GDN_STATE, "gdn_state")    /* the delta rule reads and writes its memory without the row's decay */ \
    X(DECAY_BIAS, "decay_bias")  /* the log-decay drops its dt bias: softplus(a) instead of softplus(a + dt_bias) */ \
    X(STALE_STATE, "stale_state") /* the device's steps upload the host's stale caches and state every step */ \
    X(MISSING_SYNC, "missing_sync") /* the device's attention reads its staged key tile with no __syncthreads */ \
                                    /* before it */ \
    X(GRID_SHORT, "grid_short")  /* the device's elementwise grid-stride loop stops one element short */ \
    X(TILE_SHORT, "tile_short")  /* the device's attention stages its key tile one row short of what it reads */ \
    X(PARTIAL_WARP, "partial_warp") /* the device's GEMV lanes with no chunk of the row skip the warp's butterfly */ \
    X(STALE_ROW, "stale_row")    /* a captured step keeps the row indices (positions) it was captured at */ \
    X(ROW_PAST, "row_past")      /* the device's elementwise loop reads (and writes) one value past its row */
enum kernels_fault {
#define X(e, s) KERNELS_FAULT_##e,
    KERNELS_FAULTS(X)
#undef X
    KERNELS_FAULT_COUNT
};

/* The host lane: its operating point, the int8 words of the activations its quantize stages wrote. */
struct kernels_lane;
/* A lane at point p (NULL when memory is short), and its release. */
struct kernels_lane *kernels_lane_new(const struct kernels_point *p);
void kernels_lane_free(struct kernels_lane *L);
/* A matrix operand of a leaf, as a kernel reads it: checkpoint rows in their block format (decoded where they are
 * read), or plain f32 values (a strided read gathered). */
struct kernels_weights {
    struct ir_ckpt_rows ck;
    bool ckpt;
    const float *plain;
    int64_t rows, cols;
};
/* Operand i of leaf l, taken from `values` (made for the leaf's graph), as a rows × cols matrix; 0, or -1 with the
 * failure written (checkpoint rows of another shape among them). */
int kernels_weights_get(struct ir_leaf *l, const struct ir_values *values, int i, int64_t rows, int64_t cols,
                        struct kernels_weights *w);

/* Plant fault f in every later launch (tests only). */
void kernels_lane_plant_fault(struct kernels_lane *L, enum kernels_fault f);
/* Run top-level op `op` of g as one launch over the buffers v (made for g): every stage in order, each stage's grid
 * walked as its kernel walks it. 0, or -1 with err naming the launch. */
int kernels_lane_launch(struct kernels_lane *L, const struct ir_graph *g, int32_t op, struct ir_values *v,
                        char err[IR_ERR_LEN]);
/* Load tensor t as the lane's quantize stage would write it from `source` (n values, `words` words): its words kept
 * for the products that read t, the value they stand for written to `values`. 0, or -1 when memory is short. */
int kernels_lane_load_quantized(struct kernels_lane *L, ir_tid t, const float *source, int64_t n, int words,
                                float *values);
/* Forget every quantized activation (a new step, or a new graph). */
void kernels_lane_forget(struct kernels_lane *L);
/* Whether the lane has a kernel stage for primitive kind k. */
bool kernels_lane_has_stage(enum ir_kind k);
/* The kernel a top-level op launches: its class or kind name. */
const char *kernels_launch_kernel(const struct ir_op *op);

/* The quantize op of g (top-level, or a part of a fused op) whose result is tensor t, or NULL. */
const struct ir_op *kernels_quantize_of(const struct ir_graph *g, ir_tid t);

/* A launch's signature: "kernel: stage stage ...", each stage with the variant its numerics take at point p
 * (matmul[q8_0,i8], attention[f16-tiles], quantize[x2], ...). Whether the host lane has a stage for every leaf. */
bool kernels_launch_signature(const struct kernels_point *p, const struct ir_graph *g, int32_t op, char *out,
                              size_t cap);

/* One launch's shape: its kernel, stages, grid and block (the first stage that sets them: a product, a norm, an
 * attention) and the shared memory a block asks for. */
struct kernels_launch {
    const char *kernel;
    int32_t stages;
    int64_t grid, block, smem_bytes;
};
/* The launch of top-level op `op` of g at point p. */
struct kernels_launch kernels_launch_plan(const struct kernels_point *p, const struct ir_graph *g, int32_t op);

/* ── The device runner (kernels/device.cu; kernels/device_none.c without CUDA; kernels/devplan.c) ───────── */

/* A CUDA device opened for the lane's launches: a buffer for every tensor of the graph it is prepared for (weights
 * in their GGML block formats, uploaded once; activations, caches and recurrent state kept there between launches and
 * steps), one stream, and the CUDA graph of the step it replays. */
struct kernels_device;

/* Every buffer cut from the device's allocation starts at a multiple of this many bytes. */
#define KERNELS_DEVICE_ALIGN 256
/* n bytes rounded up to KERNELS_DEVICE_ALIGN (0 for none). */
int64_t kernels_device_round(int64_t n);

/* Whether fusecheck was built with the CUDA kernels, and the chips they were built for ("sm_80, sm_89, sm_90"). */
bool kernels_device_built(void);
const char *kernels_device_archs(void);
/* The CUDA devices present: their number, or -1 with err ("fusecheck was built without CUDA", "no CUDA device: ..."). */
int kernels_device_count(char err[IR_ERR_LEN]);
/* The index kernels_device_open takes for the simulated device: kernels.cu and device.cu built by the C++ compiler
 * and run on the CPU (kernels/sim_*.cc), each launch checked as a GPU would not (docs/numerics.md). */
#define KERNELS_DEVICE_SIM (-2)
/* Parse a --device value: "host" (-1 into *index), "sim" (KERNELS_DEVICE_SIM), "cuda" (0) or "cuda:N"; 0, or -1
 * with err. */
int kernels_device_parse(const char *s, int *index, char err[IR_ERR_LEN]);
/* Device `index` opened for the lane's launches (NULL with err: no such device, not built), or the simulated device
 * (KERNELS_DEVICE_SIM). Each launch runs at its lane's operating point. */
struct kernels_device *kernels_device_open(int index, char err[IR_ERR_LEN]);
void kernels_device_close(struct kernels_device *D);
/* The backend name results.db keeps the device's rows under: "cuda:<device name>:sm_<major><minor>", or "sim". */
const char *kernels_device_backend(const struct kernels_device *D);
/* The backend name of a device called `name` of compute capability major.minor, written to out. */
void kernels_device_backend_name(const char *name, int major, int minor, char *out, size_t cap);
/* The device memory, in bytes, that running g's launches at point p takes — what kernels_device_prepare allocates:
 * every tensor's buffer (a checkpoint constant in its block format), the quantized words of every quantize result,
 * a flag word a launch, and the largest launch's scratch; each rounded to KERNELS_DEVICE_ALIGN. */
int64_t kernels_device_need(const struct kernels_point *p, const struct ir_graph *g);
/* The bytes of g's flag words (one a launch: a rows_gather's index out of its table). */
int64_t kernels_device_flags_bytes(const struct ir_graph *g);
/* Bytes of tensor t's device buffer (checkpoint rows in their block format, else f32 values), and of its quantized
 * words (0 unless a quantize writes it). */
int64_t kernels_device_tensor_bytes(const struct ir_graph *g, ir_tid t);
int64_t kernels_device_words_bytes(const struct ir_graph *g, ir_tid t);
/* The scratch, in bytes, one top-level op's launch takes beyond its tensors' buffers, rounded: its stages' largest,
 * each stage's strided reads gathered, checkpoints read as plain values dequantized, a split attention's partial
 * softmaxes, a mixture's routing and hidden rows, a result placed into its own buffer copied aside. */
int64_t kernels_device_scratch(const struct kernels_point *p, const struct ir_graph *g, int32_t op);
/* Whether tensor t of g is given by the host (an input, a param or a constant) rather than computed in a step (the
 * device checks a row index the host gives before a launch, one computed in the step as its kernel reads it). */
bool kernels_device_host_given(const struct ir_graph *g, ir_tid t);
/* Make the device ready for g's launches at point p: its memory need checked against the device's free memory
 * before any launch (-1 with err saying how many bytes it needs and has), then its memory allocated. */
int kernels_device_prepare(struct kernels_device *D, const struct kernels_point *p, const struct ir_graph *g,
                           char err[IR_ERR_LEN]);
/* Plant fault f in every later launch (tests only; the device takes GEMV_ROW — its GEMV writes output j's value to
 * output j + 1 — STALE_STATE and the faults from MISSING_SYNC on; the others are the host lane's). */
void kernels_device_plant_fault(struct kernels_device *D, enum kernels_fault f);
/* Run top-level op `op` of g on the device over the buffers v: its stages launched in order on the device's stream,
 * quantized activations taken from lane L where it holds them; every CUDA error reported naming the launch and the
 * stage. 0, or -1 with err. */
int kernels_device_launch(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g, int32_t op,
                          struct ir_values *v, char err[IR_ERR_LEN]);
/* The device's kernels' own time so far, in seconds (CUDA events around each stage's kernels; copies excluded). */
double kernels_device_seconds(const struct kernels_device *D);
/* Forget the device's quantized activations (a new step). */
void kernels_device_forget(struct kernels_device *D);
/* Run one whole step of g (every launch in order) on the device over the host's values v: the host's inputs and
 * params uploaded (and, the first time v is stepped, every other plain tensor: constants, state); the launches on the
 * device's one stream over its own buffers, the caches and state left there for the next step; captured once as a
 * CUDA graph and replayed every step (positions and tokens are read by the kernels from the device), unless graphs
 * are off; the observed tensors read back into v. A CUDA error is reported naming the launch (uncaptured) or the
 * step's graph (captured: run uncaptured to name the launch); a row index out of range, naming its launch. 0, or -1
 * with err. */
int kernels_device_step(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g,
                        struct ir_values *v, char err[IR_ERR_LEN]);
/* Capture steps as CUDA graphs (true, the default unless FUSECHECK_CUDA_GRAPHS=0 is set) or launch them one by one. */
void kernels_device_use_graphs(struct kernels_device *D, bool on);
/* Values v (and maybe others) are about to be freed: whatever state of v the device holds is dropped, never written
 * back to v, and the checkpoint rows the device holds are uploaded again next time (host bytes at a freed address
 * may hold other rows later). */
void kernels_device_release(struct kernels_device *D, const struct ir_values *v);
/* The simulated device's schedules: each launch run under n of them (1 to 3: threads in order, reversed, a random
 * order drawn from `seed` at every barrier), all required to leave the same bits (3, seed 1 unless set). */
void kernels_sim_schedules(int n, uint64_t seed);
/* The chip the simulated device's next launches are held to: its name and the shared memory it gives a block
 * (kernels_device_launch and kernels_device_step set it from the lane's point). */
void kernels_sim_chip(const char *name, int64_t smem_bytes);
/* The static shared memory the simulated device charges `kernel`'s launches (the __shared__ variables its launches
 * have declared so far, each 16-byte aligned), or -1 when it has not run. */
int64_t kernels_sim_static_smem(const char *kernel);

/* How the simulated device places a buffer of n bytes: the bytes between its end and its guard page (0: an access
 * one byte past it is caught), and the alignment of its start into *align. */
int64_t kernels_sim_guard_gap(int64_t n, int64_t *align);

/* What the device runner did so far. */
struct kernels_device_stats {
    int64_t steps;          /* steps run whole on the device */
    int64_t captures;       /* steps captured as a CUDA graph */
    int64_t instantiations; /* graphs instantiated */
    int64_t replays;        /* graph launches */
    int64_t uploaded, read; /* bytes copied to the device, and back */
};
void kernels_device_stats_get(const struct kernels_device *D, struct kernels_device_stats *out);
/* One step of g over v on lane L: every launch in order on the host lane, or kernels_device_step on its device. */
int kernels_lane_step(struct kernels_lane *L, const struct ir_graph *g, struct ir_values *v, char err[IR_ERR_LEN]);

/* Lane L's operating point. */
const struct kernels_point *kernels_lane_point(const struct kernels_lane *L);
/* How rows written into tensor t are kept while L runs a launch of its graph: a KV cache in the cache's type. */
enum shim_keep kernels_lane_row_keep(const struct kernels_lane *L, ir_tid t);
/* Run top-level op `op` of g over v as lane L does, each leaf through `leaf` (ctx its first argument; 0 done, 1 the
 * evaluator's, -1 failed) and values placed into cache rows rounded as L keeps them; err names the launch. */
int kernels_lane_walk(struct kernels_lane *L, const struct ir_graph *g, int32_t op, struct ir_values *v,
                      int (*leaf)(void *ctx, struct ir_leaf *l), void *ctx, char err[IR_ERR_LEN]);
/* The chunks an attention's span is cut into at point p (a split attention's blocks a head), and how its tiles hold
 * their operands (enum ka_tile) — the host lane's and the device's geometry alike. */
int64_t kernels_attention_chunks(const struct kernels_point *p, const struct ir_attention *s);
/* The rows of its tiles at point p (kernels_attn_tile_rows at the chip's shared memory). */
int64_t kernels_attention_tile_rows(const struct kernels_point *p, const struct ir_attention *s);
int kernels_attention_tile(const struct kernels_point *p, const struct ir_attention *s);

/* Run lane L's launches on device D instead of the host (NULL: back on the host); D stays the caller's. */
void kernels_lane_use_device(struct kernels_lane *L, struct kernels_device *D);
/* The int8 words lane L holds for tensor t: its blocks (32 values each) and words a value; NULL when none. */
const void *kernels_lane_quantized(const struct kernels_lane *L, ir_tid t, int64_t *nblocks, int *words);

/* ── Bounds (kernels/bounds.c) ───────────────────────────────────────────────────────────────────────────── */

/* The error bounds a launch's outputs keep against a reference, element by element (docs/numerics.md): an
 * evaluation over `bounds` (values made for g, each tensor's bound on |lane − reference|) whose leaves carry bounds
 * from their inputs to their results, reading the reference's values `ref` (made for g too) for magnitudes. A bound
 * of +inf marks an element with no bound (an arg-max or an expert choice the inputs' errors could flip);
 * *ambiguous counts them. `quantized_ref`: the reference includes the quantize ops (else quantized activations
 * carry their quantization error as measured input errors). */
int kernels_bounds_launch(const struct kernels_point *p, const struct ir_graph *g, int32_t op,
                          const struct ir_values *ref, struct ir_values *bounds, int64_t *ambiguous,
                          char err[IR_ERR_LEN]);
/* γ_n = n·u / (1 − n·u), u = 2⁻²⁴: the relative error bound of n f32 roundings. */
double kernels_gamma(double n);
/* The error bound of an f32 product's output that sums k terms of total magnitude `mag` = Σ|x·w|, by the lane's
 * kernel against the evaluator: f32 activations (words 0) or int8 words (1, 2). */
double kernels_product_bound(int64_t k, int words, double mag);
/* The most an activation value of a block with largest magnitude `amax` moves when quantized in `words` words. */
double kernels_quant_error(double amax, int words);

/* ── Tolerance runs (kernels/tolerance.c) ────────────────────────────────────────────────────────────────── */

/* One launch output compared with a reference. */
struct kernels_tol_row {
    int32_t launch;
    const char *kernel;
    int32_t step;
    bool unquantized;           /* against the lifted graph without quantize ops, under the mode's bound */
    char tensor[IR_MAX_NAME];
    int64_t elements, ambiguous;
    double max_abs, max_rel, nmse;
    double bound;               /* the bound at the worst element (largest error / bound) */
    double max_abs_bound;       /* the bound at the element with the largest |error| (max_abs's own) */
    double ratio;               /* that element's error over its bound (0 when exact) */
    int64_t worst;              /* its index */
    float lane, ref;            /* its two values */
    bool pass;
    char why[160];              /* a failure besides the bound ("not an f16 value", ...) */
};

/* One step end to end: the lane's own chain of launches against the reference's, on the observed logits. */
struct kernels_tol_step {
    int32_t step;
    char tensor[IR_MAX_NAME];
    double nmse, kl, max_abs;
    int32_t top1_agree, rows;
};

struct kernels_tol_result {
    struct kernels_tol_row *rows;
    int32_t nrows, cap;
    struct kernels_tol_step *steps;
    int32_t nsteps;
    int32_t launches, failed;
    double seconds_lane, seconds_eval; /* the host lane's and the evaluator's time over the chained steps */
    char backend[128];                 /* where the launches ran: "host", or the device's backend name */
};

/* What a tolerance run takes: the rewritten graph and its shim, the reference it is held to (the lifted graph with
 * the chip's quantize ops inserted) and the lifted graph itself, the seed, the decode steps, a planted fault. */
struct kernels_tol_input {
    const struct ir_graph *rewritten, *reference, *lifted;
    const struct kernels_point *point;
    uint64_t seed;
    int32_t steps;
    enum kernels_fault fault;
    bool chain_only;  /* only the steps end to end (no launch by launch comparison): what a benchmark times */
    struct kernels_device *device; /* run the launches there (NULL: the host lane), each also against the host lane */
    bool (*stop)(void); /* polled before each step (NULL: never): true ends the run there, -1 with err "interrupted" */
};
/* Run every launch of every step on the host lane, each fed its reference inputs and held to its bounds, and the
 * chained steps end to end. 0 (failures are rows with pass false), or -1 with err when a run cannot be made. */
int kernels_tolerance(const struct kernels_tol_input *in, struct kernels_tol_result *out, char err[IR_ERR_LEN]);
void kernels_tol_result_free(struct kernels_tol_result *r);

#endif
