// What counts as a visible character, for the refusal of owners and
// statements that show nothing (only NUL, zero-width or blank characters)
// and of owners with control characters. The Python checks read the same
// table from the compiled module (_core.INVISIBLE_RANGES), so both layers
// refuse the same texts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace agentsensus {

struct CodeRange {
    uint32_t lo, hi;  // inclusive
};

// Control characters (Unicode Cc): C0, DEL and C1.
constexpr CodeRange kControlRanges[] = {{0x00, 0x1F}, {0x7F, 0x9F}};

// Code points that show nothing: controls, White_Space, and the default
// ignorable and format characters (zero-width space and joiners, bidi
// marks, word joiner, variation selectors, BOM, fillers, tags).
constexpr CodeRange kInvisibleRanges[] = {
    {0x00, 0x20},       {0x7F, 0xA0},       {0xAD, 0xAD},       {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160},
    {0x1680, 0x1680},   {0x17B4, 0x17B5},   {0x180B, 0x180F},   {0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x206F},
    {0x3000, 0x3000},   {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8},
    {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
};

template <size_t N> constexpr bool in_ranges(const CodeRange (&r)[N], uint32_t cp) {
    for (const CodeRange& x : r)
        if (cp >= x.lo && cp <= x.hi) return true;
    return false;
}

// Calls fn on each code point of UTF-8 text; a byte that does not start a
// well-formed sequence is passed as 0xFFFD (visible: it is not ours to judge).
template <class F> void each_code_point(std::string_view s, F&& fn) {
    size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) {
            fn(0xFFFDu);
            ++i;
            continue;
        }
        uint32_t cp = n == 1 ? c : c & (0x7F >> n);
        for (size_t j = 1; j < n; ++j) cp = (cp << 6) | (static_cast<unsigned char>(s[i + j]) & 0x3F);
        fn(cp);
        i += n;
    }
}

inline bool has_visible(std::string_view s) {
    bool any = false;
    each_code_point(s, [&](uint32_t cp) { any = any || !in_ranges(kInvisibleRanges, cp); });
    return any;
}

inline bool has_control(std::string_view s) {
    bool any = false;
    each_code_point(s, [&](uint32_t cp) { any = any || in_ranges(kControlRanges, cp); });
    return any;
}

}  // namespace agentsensus
