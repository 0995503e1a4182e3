#include "harness/gpu/gemm_model.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <regex>
#include <stdexcept>
#include <string>

#include "harness/core/units.hpp"

namespace redline {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0); }

std::optional<std::int64_t> parse_edge(std::string_view text) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 1 || value > kMaxTileEdge) return std::nullopt;
  return value;
}

struct TileIdEntry {
  int id;
  int rows, cols;
};

// cublasLtMatmulTile_t from /usr/local/cuda/include/cublasLt.h of cuBLAS
// 13.1.0.3 (CUDA 13 toolkit): CUBLASLT_MATMUL_TILE_<rows>x<cols> = id, with
// ids 1..634 dense (0 is UNDEFINED, 635 is TILE_END). The header documents
// the name as rows x columns of C. Written from the header with
//   sed -n 's/^ *CUBLASLT_MATMUL_TILE_\([0-9]*\)x\([0-9]*\) = \([0-9]*\),.*/{\3, \1, \2},/p'
// so a newer header is checked by re-running it and diffing. NVIDIA appends
// new tiles at the end; existing values have not changed between releases.
constexpr TileIdEntry kCublasLtTiles[] = {
    {1, 8, 8}, {2, 8, 16}, {3, 16, 8}, {4, 8, 32}, {5, 16, 16}, {6, 32, 8}, {7, 8, 64}, {8, 16, 32},
    {9, 32, 16}, {10, 64, 8}, {11, 32, 32}, {12, 32, 64}, {13, 64, 32}, {14, 32, 128}, {15, 64, 64},
    {16, 128, 32}, {17, 64, 128}, {18, 128, 64}, {19, 64, 256}, {20, 128, 128}, {21, 256, 64}, {22, 64, 512},
    {23, 128, 256}, {24, 256, 128}, {25, 512, 64}, {26, 64, 96}, {27, 96, 64}, {28, 96, 128}, {29, 128, 160},
    {30, 160, 128}, {31, 192, 128}, {32, 128, 192}, {33, 128, 96}, {34, 32, 256}, {35, 256, 32}, {36, 8, 128},
    {37, 8, 192}, {38, 8, 256}, {39, 8, 320}, {40, 8, 384}, {41, 8, 448}, {42, 8, 512}, {43, 8, 576},
    {44, 8, 640}, {45, 8, 704}, {46, 8, 768}, {47, 16, 64}, {48, 16, 128}, {49, 16, 192}, {50, 16, 256},
    {51, 16, 320}, {52, 16, 384}, {53, 16, 448}, {54, 16, 512}, {55, 16, 576}, {56, 16, 640}, {57, 16, 704},
    {58, 16, 768}, {59, 24, 64}, {60, 24, 128}, {61, 24, 192}, {62, 24, 256}, {63, 24, 320}, {64, 24, 384},
    {65, 24, 448}, {66, 24, 512}, {67, 24, 576}, {68, 24, 640}, {69, 24, 704}, {70, 24, 768}, {71, 32, 192},
    {72, 32, 320}, {73, 32, 384}, {74, 32, 448}, {75, 32, 512}, {76, 32, 576}, {77, 32, 640}, {78, 32, 704},
    {79, 32, 768}, {80, 40, 64}, {81, 40, 128}, {82, 40, 192}, {83, 40, 256}, {84, 40, 320}, {85, 40, 384},
    {86, 40, 448}, {87, 40, 512}, {88, 40, 576}, {89, 40, 640}, {90, 40, 704}, {91, 40, 768}, {92, 48, 64},
    {93, 48, 128}, {94, 48, 192}, {95, 48, 256}, {96, 48, 320}, {97, 48, 384}, {98, 48, 448}, {99, 48, 512},
    {100, 48, 576}, {101, 48, 640}, {102, 48, 704}, {103, 48, 768}, {104, 56, 64}, {105, 56, 128},
    {106, 56, 192}, {107, 56, 256}, {108, 56, 320}, {109, 56, 384}, {110, 56, 448}, {111, 56, 512},
    {112, 56, 576}, {113, 56, 640}, {114, 56, 704}, {115, 56, 768}, {116, 64, 192}, {117, 64, 320},
    {118, 64, 384}, {119, 64, 448}, {120, 64, 576}, {121, 64, 640}, {122, 64, 704}, {123, 64, 768},
    {124, 72, 64}, {125, 72, 128}, {126, 72, 192}, {127, 72, 256}, {128, 72, 320}, {129, 72, 384},
    {130, 72, 448}, {131, 72, 512}, {132, 72, 576}, {133, 72, 640}, {134, 80, 64}, {135, 80, 128},
    {136, 80, 192}, {137, 80, 256}, {138, 80, 320}, {139, 80, 384}, {140, 80, 448}, {141, 80, 512},
    {142, 80, 576}, {143, 88, 64}, {144, 88, 128}, {145, 88, 192}, {146, 88, 256}, {147, 88, 320},
    {148, 88, 384}, {149, 88, 448}, {150, 88, 512}, {151, 96, 192}, {152, 96, 256}, {153, 96, 320},
    {154, 96, 384}, {155, 96, 448}, {156, 96, 512}, {157, 104, 64}, {158, 104, 128}, {159, 104, 192},
    {160, 104, 256}, {161, 104, 320}, {162, 104, 384}, {163, 104, 448}, {164, 112, 64}, {165, 112, 128},
    {166, 112, 192}, {167, 112, 256}, {168, 112, 320}, {169, 112, 384}, {170, 120, 64}, {171, 120, 128},
    {172, 120, 192}, {173, 120, 256}, {174, 120, 320}, {175, 120, 384}, {176, 128, 320}, {177, 128, 384},
    {178, 136, 64}, {179, 136, 128}, {180, 136, 192}, {181, 136, 256}, {182, 136, 320}, {183, 144, 64},
    {184, 144, 128}, {185, 144, 192}, {186, 144, 256}, {187, 144, 320}, {188, 152, 64}, {189, 152, 128},
    {190, 152, 192}, {191, 152, 256}, {192, 152, 320}, {193, 160, 64}, {194, 160, 192}, {195, 160, 256},
    {196, 168, 64}, {197, 168, 128}, {198, 168, 192}, {199, 168, 256}, {200, 176, 64}, {201, 176, 128},
    {202, 176, 192}, {203, 176, 256}, {204, 184, 64}, {205, 184, 128}, {206, 184, 192}, {207, 184, 256},
    {208, 192, 64}, {209, 192, 192}, {210, 192, 256}, {211, 200, 64}, {212, 200, 128}, {213, 200, 192},
    {214, 208, 64}, {215, 208, 128}, {216, 208, 192}, {217, 216, 64}, {218, 216, 128}, {219, 216, 192},
    {220, 224, 64}, {221, 224, 128}, {222, 224, 192}, {223, 232, 64}, {224, 232, 128}, {225, 232, 192},
    {226, 240, 64}, {227, 240, 128}, {228, 240, 192}, {229, 248, 64}, {230, 248, 128}, {231, 248, 192},
    {232, 256, 192}, {233, 264, 64}, {234, 264, 128}, {235, 272, 64}, {236, 272, 128}, {237, 280, 64},
    {238, 280, 128}, {239, 288, 64}, {240, 288, 128}, {241, 296, 64}, {242, 296, 128}, {243, 304, 64},
    {244, 304, 128}, {245, 312, 64}, {246, 312, 128}, {247, 320, 64}, {248, 320, 128}, {249, 328, 64},
    {250, 328, 128}, {251, 336, 64}, {252, 336, 128}, {253, 344, 64}, {254, 344, 128}, {255, 352, 64},
    {256, 352, 128}, {257, 360, 64}, {258, 360, 128}, {259, 368, 64}, {260, 368, 128}, {261, 376, 64},
    {262, 376, 128}, {263, 384, 64}, {264, 384, 128}, {265, 392, 64}, {266, 400, 64}, {267, 408, 64},
    {268, 416, 64}, {269, 424, 64}, {270, 432, 64}, {271, 440, 64}, {272, 448, 64}, {273, 456, 64},
    {274, 464, 64}, {275, 472, 64}, {276, 480, 64}, {277, 488, 64}, {278, 496, 64}, {279, 504, 64},
    {280, 520, 64}, {281, 528, 64}, {282, 536, 64}, {283, 544, 64}, {284, 552, 64}, {285, 560, 64},
    {286, 568, 64}, {287, 576, 64}, {288, 584, 64}, {289, 592, 64}, {290, 600, 64}, {291, 608, 64},
    {292, 616, 64}, {293, 624, 64}, {294, 632, 64}, {295, 640, 64}, {296, 648, 64}, {297, 656, 64},
    {298, 664, 64}, {299, 672, 64}, {300, 680, 64}, {301, 688, 64}, {302, 696, 64}, {303, 704, 64},
    {304, 712, 64}, {305, 720, 64}, {306, 728, 64}, {307, 736, 64}, {308, 744, 64}, {309, 752, 64},
    {310, 760, 64}, {311, 768, 64}, {312, 64, 16}, {313, 64, 24}, {314, 64, 40}, {315, 64, 48}, {316, 64, 56},
    {317, 64, 72}, {318, 64, 80}, {319, 64, 88}, {320, 64, 104}, {321, 64, 112}, {322, 64, 120},
    {323, 64, 136}, {324, 64, 144}, {325, 64, 152}, {326, 64, 160}, {327, 64, 168}, {328, 64, 176},
    {329, 64, 184}, {330, 64, 200}, {331, 64, 208}, {332, 64, 216}, {333, 64, 224}, {334, 64, 232},
    {335, 64, 240}, {336, 64, 248}, {337, 64, 264}, {338, 64, 272}, {339, 64, 280}, {340, 64, 288},
    {341, 64, 296}, {342, 64, 304}, {343, 64, 312}, {344, 64, 328}, {345, 64, 336}, {346, 64, 344},
    {347, 64, 352}, {348, 64, 360}, {349, 64, 368}, {350, 64, 376}, {351, 64, 392}, {352, 64, 400},
    {353, 64, 408}, {354, 64, 416}, {355, 64, 424}, {356, 64, 432}, {357, 64, 440}, {358, 64, 456},
    {359, 64, 464}, {360, 64, 472}, {361, 64, 480}, {362, 64, 488}, {363, 64, 496}, {364, 64, 504},
    {365, 64, 520}, {366, 64, 528}, {367, 64, 536}, {368, 64, 544}, {369, 64, 552}, {370, 64, 560},
    {371, 64, 568}, {372, 64, 584}, {373, 64, 592}, {374, 64, 600}, {375, 64, 608}, {376, 64, 616},
    {377, 64, 624}, {378, 64, 632}, {379, 64, 648}, {380, 64, 656}, {381, 64, 664}, {382, 64, 672},
    {383, 64, 680}, {384, 64, 688}, {385, 64, 696}, {386, 64, 712}, {387, 64, 720}, {388, 64, 728},
    {389, 64, 736}, {390, 64, 744}, {391, 64, 752}, {392, 64, 760}, {393, 128, 8}, {394, 128, 16},
    {395, 128, 24}, {396, 128, 40}, {397, 128, 48}, {398, 128, 56}, {399, 128, 72}, {400, 128, 80},
    {401, 128, 88}, {402, 128, 104}, {403, 128, 112}, {404, 128, 120}, {405, 128, 136}, {406, 128, 144},
    {407, 128, 152}, {408, 128, 168}, {409, 128, 176}, {410, 128, 184}, {411, 128, 200}, {412, 128, 208},
    {413, 128, 216}, {414, 128, 224}, {415, 128, 232}, {416, 128, 240}, {417, 128, 248}, {418, 128, 264},
    {419, 128, 272}, {420, 128, 280}, {421, 128, 288}, {422, 128, 296}, {423, 128, 304}, {424, 128, 312},
    {425, 128, 328}, {426, 128, 336}, {427, 128, 344}, {428, 128, 352}, {429, 128, 360}, {430, 128, 368},
    {431, 128, 376}, {432, 128, 392}, {433, 128, 400}, {434, 128, 408}, {435, 128, 416}, {436, 128, 424},
    {437, 128, 432}, {438, 128, 440}, {439, 128, 448}, {440, 128, 456}, {441, 128, 464}, {442, 128, 472},
    {443, 128, 480}, {444, 128, 488}, {445, 128, 496}, {446, 128, 504}, {447, 128, 512}, {448, 192, 8},
    {449, 192, 16}, {450, 192, 24}, {451, 192, 32}, {452, 192, 40}, {453, 192, 48}, {454, 192, 56},
    {455, 192, 72}, {456, 192, 80}, {457, 192, 88}, {458, 192, 96}, {459, 192, 104}, {460, 192, 112},
    {461, 192, 120}, {462, 192, 136}, {463, 192, 144}, {464, 192, 152}, {465, 192, 160}, {466, 192, 168},
    {467, 192, 176}, {468, 192, 184}, {469, 192, 200}, {470, 192, 208}, {471, 192, 216}, {472, 192, 224},
    {473, 192, 232}, {474, 192, 240}, {475, 192, 248}, {476, 192, 264}, {477, 192, 272}, {478, 192, 280},
    {479, 192, 288}, {480, 192, 296}, {481, 192, 304}, {482, 192, 312}, {483, 192, 320}, {484, 192, 328},
    {485, 192, 336}, {486, 256, 8}, {487, 256, 16}, {488, 256, 24}, {489, 256, 40}, {490, 256, 48},
    {491, 256, 56}, {492, 256, 72}, {493, 256, 80}, {494, 256, 88}, {495, 256, 96}, {496, 256, 104},
    {497, 256, 112}, {498, 256, 120}, {499, 256, 136}, {500, 256, 144}, {501, 256, 152}, {502, 256, 160},
    {503, 256, 168}, {504, 256, 176}, {505, 256, 184}, {506, 256, 200}, {507, 256, 208}, {508, 256, 216},
    {509, 256, 224}, {510, 256, 232}, {511, 256, 240}, {512, 256, 248}, {513, 256, 256}, {514, 320, 8},
    {515, 320, 16}, {516, 320, 24}, {517, 320, 32}, {518, 320, 40}, {519, 320, 48}, {520, 320, 56},
    {521, 320, 72}, {522, 320, 80}, {523, 320, 88}, {524, 320, 96}, {525, 320, 104}, {526, 320, 112},
    {527, 320, 120}, {528, 320, 136}, {529, 320, 144}, {530, 320, 152}, {531, 320, 160}, {532, 320, 168},
    {533, 320, 176}, {534, 320, 184}, {535, 320, 192}, {536, 320, 200}, {537, 384, 8}, {538, 384, 16},
    {539, 384, 24}, {540, 384, 32}, {541, 384, 40}, {542, 384, 48}, {543, 384, 56}, {544, 384, 72},
    {545, 384, 80}, {546, 384, 88}, {547, 384, 96}, {548, 384, 104}, {549, 384, 112}, {550, 384, 120},
    {551, 384, 136}, {552, 384, 144}, {553, 384, 152}, {554, 384, 160}, {555, 384, 168}, {556, 448, 8},
    {557, 448, 16}, {558, 448, 24}, {559, 448, 32}, {560, 448, 40}, {561, 448, 48}, {562, 448, 56},
    {563, 448, 72}, {564, 448, 80}, {565, 448, 88}, {566, 448, 96}, {567, 448, 104}, {568, 448, 112},
    {569, 448, 120}, {570, 448, 128}, {571, 448, 136}, {572, 448, 144}, {573, 512, 8}, {574, 512, 16},
    {575, 512, 24}, {576, 512, 32}, {577, 512, 40}, {578, 512, 48}, {579, 512, 56}, {580, 512, 72},
    {581, 512, 80}, {582, 512, 88}, {583, 512, 96}, {584, 512, 104}, {585, 512, 112}, {586, 512, 120},
    {587, 512, 128}, {588, 576, 8}, {589, 576, 16}, {590, 576, 24}, {591, 576, 32}, {592, 576, 40},
    {593, 576, 48}, {594, 576, 56}, {595, 576, 72}, {596, 576, 80}, {597, 576, 88}, {598, 576, 96},
    {599, 576, 104}, {600, 576, 112}, {601, 640, 8}, {602, 640, 16}, {603, 640, 24}, {604, 640, 32},
    {605, 640, 40}, {606, 640, 48}, {607, 640, 56}, {608, 640, 72}, {609, 640, 80}, {610, 640, 88},
    {611, 640, 96}, {612, 704, 8}, {613, 704, 16}, {614, 704, 24}, {615, 704, 32}, {616, 704, 40},
    {617, 704, 48}, {618, 704, 56}, {619, 704, 72}, {620, 704, 80}, {621, 704, 88}, {622, 768, 8},
    {623, 768, 16}, {624, 768, 24}, {625, 768, 32}, {626, 768, 40}, {627, 768, 48}, {628, 768, 56},
    {629, 768, 72}, {630, 768, 80}, {631, 256, 512}, {632, 256, 1024}, {633, 512, 512}, {634, 512, 1024},
};

constexpr bool ids_are_dense() {
  for (std::size_t i = 0; i < std::size(kCublasLtTiles); ++i)
    if (kCublasLtTiles[i].id != static_cast<int>(i) + 1) return false;
  return true;
}
static_assert(ids_are_dense(), "tile_from_cublaslt_id indexes the table by id - 1");

}  // namespace

namespace {

// The first multiple of the tile above the current size (the current size
// is no advice).
std::int64_t first_padded_size(const GemmProblem& problem, GemmDim dim) {
  const std::int64_t current = dim == GemmDim::m ? problem.m : problem.n;
  const std::int64_t edge = dim == GemmDim::m ? problem.tile.rows : problem.tile.cols;
  const std::int64_t first = ceil_div(current, edge) * edge;
  return first == current ? first + edge : first;
}

// The sizes padding advice may name along one dimension: the multiples of the
// tile above the current size, up to (1 + max_growth) times it (at least the
// first multiple), each with its prediction.
class PaddingCandidates {
 public:
  PaddingCandidates(const GemmProblem& problem, GemmDim dim, double max_growth)
      : problem_(problem), dim_(dim), before_(predict_gemm(problem)) {
    current_ = dim == GemmDim::m ? problem.m : problem.n;
    edge_ = dim == GemmDim::m ? problem.tile.rows : problem.tile.cols;
    first_ = first_padded_size(problem, dim);
    limit_ = padding_search_limit(problem, dim, max_growth);
  }

  const GemmPrediction& before() const { return before_; }

  // Calls visit(size, prediction) in increasing size until it returns true;
  // returns that size, or nullopt.
  template <typename Visit>
  std::optional<std::int64_t> each(Visit visit) const {
    // Enough candidates for any real shape; bounds the work for absurd ones.
    constexpr std::int64_t kMaxCandidates = 100000;
    std::int64_t count = 0;
    for (std::int64_t size = first_; size <= limit_ && count < kMaxCandidates; size += edge_, ++count)
      if (visit(size, at(size))) return size;
    return std::nullopt;
  }

  // The smallest candidate whose predicted efficiency reaches `efficiency`.
  std::optional<PaddingAdvice> first_reaching(double efficiency) const {
    const auto size = each([&](std::int64_t, const GemmPrediction& p) { return p.predicted_efficiency >= efficiency; });
    if (!size) return std::nullopt;
    PaddingAdvice advice;
    advice.dim = dim_;
    advice.from = current_;
    advice.to = *size;
    advice.before = before_;
    advice.after = at(*size);
    advice.gain = advice.after.predicted_efficiency / before_.predicted_efficiency - 1;
    return advice;
  }

 private:
  GemmPrediction at(std::int64_t size) const {
    GemmProblem q = problem_;
    (dim_ == GemmDim::m ? q.m : q.n) = size;
    return predict_gemm(q);
  }

  GemmProblem problem_;
  GemmDim dim_;
  GemmPrediction before_;
  std::int64_t current_ = 0, edge_ = 0, first_ = 0, limit_ = 0;
};

}  // namespace

GemmPrediction predict_gemm(const GemmProblem& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1) throw std::invalid_argument("GEMM dimensions must be at least 1");
  if (p.tile.rows < 1 || p.tile.cols < 1) throw std::invalid_argument("tile edges must be at least 1");
  if (p.sm_count < 1 || p.ctas_per_sm < 1 || p.split_k < 1 || p.batch < 1)
    throw std::invalid_argument("SM count, CTAs per SM, split-K and batch must be at least 1");
  GemmPrediction r;
  r.tiles_m = ceil_div(p.m, p.tile.rows);
  r.tiles_n = ceil_div(p.n, p.tile.cols);
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (r.tiles_m > kMax / r.tiles_n / p.split_k / p.batch) throw std::invalid_argument("the tile count overflows");
  r.tiles = r.tiles_m * r.tiles_n * p.split_k * p.batch;
  r.slots = std::int64_t{p.sm_count} * p.ctas_per_sm;
  r.waves = static_cast<double>(r.tiles) / static_cast<double>(r.slots);
  r.launch_waves = ceil_div(r.tiles, r.slots);
  r.full_waves = r.tiles / r.slots;
  // As a product of two ratios, so M*N never overflows.
  r.tile_efficiency = (static_cast<double>(p.m) / static_cast<double>(r.tiles_m * p.tile.rows)) *
                      (static_cast<double>(p.n) / static_cast<double>(r.tiles_n * p.tile.cols));
  r.wave_efficiency = static_cast<double>(r.tiles) / static_cast<double>(r.launch_waves * r.slots);
  r.predicted_efficiency = r.tile_efficiency * r.wave_efficiency;
  return r;
}

double power_capped_wave_efficiency(double wave_efficiency, double recovery) {
  if (!(wave_efficiency > 0 && wave_efficiency <= 1))
    throw std::invalid_argument("wave efficiency must be above 0 and at most 1");
  if (!(recovery >= 0 && recovery <= 1)) throw std::invalid_argument("the power-cap recovery must be from 0 to 1");
  return wave_efficiency / ((1 - recovery) + recovery * wave_efficiency);
}

double power_capped_efficiency(const GemmPrediction& prediction, double recovery) {
  return prediction.tile_efficiency * power_capped_wave_efficiency(prediction.wave_efficiency, recovery);
}

std::string power_cap_model_summary() {
  return "*_power_capped columns: fitted for a GPU at its power cap (a part-empty last wave's idle share costs " +
         format_percent(1 - kPowerCapWaveRecovery, 0) + " of its time; r = " + format_number(kPowerCapWaveRecovery, 2) +
         " from one H200 bf16 sweep, results/references/H200/gemm_sweep.csv); predicted_efficiency: fixed clock";
}

std::optional<PaddingAdvice> nearest_recovering_size(const GemmProblem& problem, GemmDim dim, double tolerance,
                                                     double max_growth) {
  const PaddingCandidates c(problem, dim, max_growth);
  double best = c.before().predicted_efficiency;
  c.each([&](std::int64_t, const GemmPrediction& after) {
    best = std::max(best, after.predicted_efficiency);
    return false;
  });
  if (c.before().predicted_efficiency >= best - tolerance) return std::nullopt;
  return c.first_reaching(best - tolerance);  // the best candidate qualifies
}

std::int64_t padding_search_limit(const GemmProblem& problem, GemmDim dim, double max_growth) {
  const std::int64_t current = dim == GemmDim::m ? problem.m : problem.n;
  return std::max(first_padded_size(problem, dim), static_cast<std::int64_t>(static_cast<double>(current) * (1 + max_growth)));
}

std::optional<PaddingAdvice> first_recovering_size(const GemmProblem& problem, GemmDim dim, double recovered,
                                                   double max_growth) {
  return PaddingCandidates(problem, dim, max_growth).first_reaching(recovered);
}

std::optional<TileShape> parse_tile(std::string_view text) {
  const auto x = text.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  const auto rows = parse_edge(text.substr(0, x));
  const auto cols = parse_edge(text.substr(x + 1));
  if (!rows || !cols) return std::nullopt;
  return TileShape{*rows, *cols};
}

std::string tile_text(const TileShape& tile) { return std::to_string(tile.rows) + "x" + std::to_string(tile.cols); }

std::optional<TileShape> tile_from_cublaslt_id(int tile_id) {
  // Dense from 1: the id indexes the table (the unit test checks it).
  if (tile_id < 1 || tile_id > max_known_cublaslt_tile_id()) return std::nullopt;
  const TileIdEntry& e = kCublasLtTiles[tile_id - 1];
  return TileShape{e.rows, e.cols};
}

int max_known_cublaslt_tile_id() { return static_cast<int>(std::size(kCublasLtTiles)); }

std::optional<TileShape> tile_from_kernel_name(std::string_view kernel_name) {
  const std::string name(kernel_name);
  // cuBLAS's own kernels say it outright.
  static const std::regex tilesize(R"(tilesize(\d{1,6})x(\d{1,6}))");
  std::smatch m;
  if (std::regex_search(name, m, tilesize)) {
    const auto rows = parse_edge(m.str(1)), cols = parse_edge(m.str(2));
    if (rows && cols) return TileShape{*rows, *cols};
  }
  // CUTLASS names list the threadblock tile first among the _AxB[xC]_
  // groups; later groups (warp shape and stages "32x3", cluster "1x2x1") are
  // smaller than any CTA tile, which is why edges below 16 are skipped.
  static const std::regex group(R"((?:^|_)(\d{1,6})x(\d{1,6})(?:x\d{1,6})?(?=_|$|>))");
  for (auto it = std::sregex_iterator(name.begin(), name.end(), group); it != std::sregex_iterator(); ++it) {
    const auto rows = parse_edge((*it).str(1)), cols = parse_edge((*it).str(2));
    if (rows && cols && *rows >= 16 && *cols >= 16) return TileShape{*rows, *cols};
  }
  return std::nullopt;
}

}  // namespace redline
