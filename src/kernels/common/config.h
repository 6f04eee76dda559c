// Every tunable of the kernels, with its reason, in one place.
#pragma once
#include <cstdint>

namespace dmlops {

// The most dimensions a kernel sees: 8 (SPEC's largest rank) plus one, for the channels-last
// re-casting (N, C, S...) -> (N, 1, S..., C) of the pooling kernels.
constexpr int kMaxRank = 9;
constexpr int kMaxSpatial = kMaxRank - 2;

// The fewest element-operations worth a thread of its own: 2^15 are some 3 microseconds of
// one thread's pooling, about what handing a share to an awake pool thread and taking its
// result back costs (threads.cpp; a sleeping one takes longer to wake, but the caller then
// takes its share itself). At 2^15 rather than 2^16, two threads take [1, 3 or 4, 112, 112]
// average pooling in a loop in 0.72-0.77 of the time, and no longer after a pause.
constexpr int64_t kMinWorkPerThread = int64_t(1) << 15;
// The most shares a call is split into (threads beyond it share the work no finer).
constexpr int kMostShares = 256;

}  // namespace dmlops

namespace dmlops {

// Outputs of one row that a pooling task keeps in its scratch at a time: their running
// maxima or sums, keys and indices stay in the first-level cache (1024 x 16 bytes).
constexpr int64_t kRowTile = 1024;

// Sets of a row tile's counts a summing task keeps, with what the finishes derive from them
// (TileCounts, KeptSets): a long row's first, middle and last tiles, plus one for the
// separable path's border rows.
constexpr int kKeptCountSets = 4;

}  // namespace dmlops

namespace dmlops {

// The widest last-dimension window the pooling fast paths walk in registers (one kernel
// instance per width, 2 to this): wider windows go offset by offset.
constexpr int64_t kWholeMost = 3;

}  // namespace dmlops

namespace dmlops {

// The most last-dimension window offsets whose real outputs the row walk keeps in a table
// (16 bytes each); beyond, they are worked out per row.
constexpr int64_t kMostTabulatedOffsets = 1 << 16;

}  // namespace dmlops

namespace dmlops {

// The most window rows (offsets of the dimensions but the last) whose offsets the register
// paths keep for a row: a 3-D window of 4 x 4 x W, or a 2-D one of 64 x W.
constexpr int64_t kMostRegisterOffsets = 64;

}  // namespace dmlops

namespace dmlops {

// The bytes of row maxima a task of the separable max-pooling path keeps for a block of
// output rows: they stay in the first-level cache (32 to 48 KB) while the second pass reads
// each of them once per window row.
constexpr int64_t kSeparableScratch = 24 * 1024;

// Channels-last max pooling's two passes (max_pool_pixels.h): a task's items are blocks of
// this many output rows of a plane (the window rows they share are made once per block: at
// 3x3 stride 2, one input row's maxima of the 33 a block needs are made again by the next
// block), and its ring of rows' maxima may take at most this many bytes (larger: the
// register path).
constexpr int64_t kPixelBlockRows = 16;
constexpr int64_t kPixelScratchMost = 4 << 20;
// How many input rows on its first pass asks for the input of.
constexpr int64_t kPixelRowsAhead = 2;

}  // namespace dmlops

namespace dmlops {

// Outputs of a row that the separable sums path sums and requantizes at a time (on the stack:
// 256 x 20 bytes).
constexpr int64_t kSeparableTile = 256;

}  // namespace dmlops

namespace dmlops {

// The fewest output bytes worth streaming stores (common/stream.h): an output this large
// leaves the caches before anyone reads it anyway.
constexpr int64_t kStreamBytes = int64_t(8) << 20;
// Rows shorter than this are not streamed a row at a time (their partial lines at both ends
// would be most of them); rows longer than kStagedRowElements are not staged.
constexpr int64_t kStreamRowBytes = 512;
// Padding's scratch holds a whole packed plane (its last two dimensions) where it fits in
// this many bytes (and has kStreamRowBytes): the plane is then streamed as one run, whatever
// its rows' length (padding/README.md "Streamed rows").
constexpr int64_t kStagedPlaneBytes = 64 * 1024;
constexpr int64_t kStagedRowElements = int64_t(1) << 16;

}  // namespace dmlops

namespace dmlops {

// How many output rows ahead the row walk asks for the input rows it will read (RowsAhead in
// rows.h): far enough that they arrive from memory meanwhile, near enough that a row's first
// outputs are not left unasked (channels-last rows are pixels, 56 to a row of the image at
// ImageNet's sizes: 8 and 16 rows ahead took 1.07 and 1.2 times the time of 4, 2 and 3 about
// the same; NCHW averages the same at 4 and 8; README "Rows ahead").
constexpr int64_t kPrefetchRowsAhead = 4;

}  // namespace dmlops

namespace dmlops {

// How many input rows ahead a streamed padding row asks for its source's lines
// (padding_rows.h): a row's loads otherwise wait on memory, its stores streamed past
// (padding/README.md "Streamed rows"; 2 and 8 rows ahead gave less).
constexpr int64_t kPadRowsAhead = 4;

}  // namespace dmlops
