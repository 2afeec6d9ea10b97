// Per-record times and per-(record, owner) metadata: the codecs of their side
// tables (declared in schema.hpp) and a small reader of the metadata's JSON.
// The record codec is untouched: a record's created/updated times and each
// owner's metadata live beside it, keyed by its id.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "agentsensus/limits.hpp"
#include "agentsensus/recall_filter.hpp"
#include "agentsensus/rows.hpp"
#include "format/bytes.hpp"

namespace agentsensus {

constexpr size_t kTimesBytes = 16;

inline std::array<unsigned char, kTimesBytes> encode_times(const RecordTimes& t) {
    std::array<unsigned char, kTimesBytes> b{};
    std::memcpy(b.data(), &t.created, 8);
    std::memcpy(b.data() + 8, &t.updated, 8);
    return b;
}

inline bool decode_times(const void* p, size_t n, RecordTimes& t) {
    if (n != kTimesBytes) return false;
    std::memcpy(&t.created, p, 8);
    std::memcpy(&t.updated, static_cast<const char*>(p) + 8, 8);
    return true;
}

// The key of a metadata row: [Be64 record][Be32 owner], so one record's rows sit together.
inline std::array<unsigned char, 12> metadata_key(uint64_t record, uint32_t owner) {
    std::array<unsigned char, 12> k{};
    Be64 r(record);
    Be32 o(owner);
    std::memcpy(k.data(), r.b, 8);
    std::memcpy(k.data() + 8, o.b, 4);
    return k;
}

// The wall clock now, in the times table's unit.
uint64_t now_micros();

// True when text is one JSON object (RFC 8259, UTF-8 not re-checked: the
// Python layer encodes it) of at most kMaxMetadataBytes; why says what is wrong.
bool valid_metadata(std::string_view text, std::string& why);
// The value of the object's top-level field `key`; false when absent or
// when text is not a JSON object.
bool metadata_field(std::string_view text, std::string_view key, JsonValue& out);

}  // namespace agentsensus
