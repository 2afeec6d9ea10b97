// The lineage tables' record formats, shared by the parts of Lineage
// (lineage*.cpp): the table names, a version's key and record (its inputs
// inline), and the checks and quoting of names in errors.
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "lineage/lineage.hpp"

namespace agentsensus {
namespace lineage_format {

// Tables: their keys, values and invariants are mapped in schema.hpp.
constexpr const char* kKeys = kLineageKeysTable.name;          // key name -> KeyRec
constexpr const char* kOwners = kLineageOwnersTable.name;      // 'n'+name -> u32 id; 'i'+Be32 id -> name
constexpr const char* kVersions = kLineageVersionsTable.name;  // (key, version) -> VersionRec
constexpr const char* kValues = kLineageValuesTable.name;      // (key, version) -> value bytes
constexpr const char* kMeta = kLineageMetaTable.name;          // counters

// VersionRec: digest[16] kind:u8 n:u32, then n inputs of
// owner:u32 version:u64 digest[16] derived:u8 name_len:u16 name.
// Input names are stored inline so a frontier walk needs no lookup per link.
constexpr size_t kVersionHeader = kValueDigestBytes + 1 + 4;
constexpr size_t kMinInputEntry = 4 + 8 + kValueDigestBytes + 1 + 2;  // an input with an empty name

// Thrown to roll back a dry run.
struct DryRun {};

struct VersionKey {
    unsigned char b[12];
    VersionKey(uint32_t key, uint64_t version) {
        Be32 k(key);
        Be64 v(version);
        std::memcpy(b, k.b, 4);
        std::memcpy(b + 4, v.b, 8);
    }
    MDB_val mv() const { return val(b, sizeof b); }
};

struct ParsedVersion {
    ValueDigest digest{};
    uint8_t kind = 0;
    uint32_t n = 0;
    std::string_view inputs;  // the raw input entries
};

inline bool parse_version(const MDB_val& v, ParsedVersion& out) {
    Reader r(v.mv_data, v.mv_size);
    std::string_view d;
    if (!r.get_bytes(kValueDigestBytes, d) || !r.get(out.kind) || !r.get(out.n)) return false;
    std::memcpy(out.digest.data(), d.data(), kValueDigestBytes);
    out.inputs = r.rest();
    return true;
}

struct InputEntry {
    uint32_t owner;
    uint64_t version;
    ValueDigest digest;
    uint8_t derived;
    std::string_view name;
};

// Iterates the input entries of a version; false at the end, throws Corrupt
// on a short record.
class InputReader {
public:
    explicit InputReader(std::string_view s) : r_(s.data(), s.size()) {}
    bool next(InputEntry& e) {
        if (r_.rest().empty()) return false;
        std::string_view d;
        uint16_t len = 0;
        if (!r_.get(e.owner) || !r_.get(e.version) || !r_.get_bytes(kValueDigestBytes, d) || !r_.get(e.derived) ||
            !r_.get(len) || !r_.get_bytes(len, e.name))
            throw Corrupt("a lineage version record is truncated");
        std::memcpy(e.digest.data(), d.data(), kValueDigestBytes);
        return true;
    }

private:
    Reader r_;
};

inline void check_name(std::string_view s, size_t limit, const char* what) {
    if (s.empty()) throw InvalidArgument(std::string(what) + " must be a non-empty string");
    if (s.size() > limit)
        throw InvalidArgument(std::string(what) + " is " + std::to_string(s.size()) + " bytes; the limit is " +
                              std::to_string(limit));
}

inline std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace lineage_format
}  // namespace agentsensus
