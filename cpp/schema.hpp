// The on-disk layout of a store: table flags, record and journal encodings.
// Changing anything here changes the file format: bump kSchemaVersion.
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace agentsensus {

constexpr uint32_t kSchemaVersion = 1;
constexpr const char* kIndexFile = "/index.usearch";

// Journal operations: everything the in-memory index and allow-sets derive
// from, in commit order, so any process can catch up from any point.
// An entry is [u8 op][u64 record][u32 owner] (13 bytes).
enum Op : uint8_t { kAdd = 1, kOwn = 2, kDisown = 3, kDel = 4 };
constexpr size_t kJournalEntry = 13;

constexpr unsigned kDupFixedInt = MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP;

// records: id (be64) -> RecordHeader + UTF-8 text.
struct RecordHeader {
    uint32_t round;
    uint32_t flags;
    uint64_t deposit;
};

inline std::string encode_record(uint32_t round, uint64_t deposit, std::string_view text) {
    std::string v;
    v.reserve(sizeof(RecordHeader) + text.size());
    RecordHeader h{round, 0, deposit};
    v.append(reinterpret_cast<const char*>(&h), sizeof h);
    v.append(text);
    return v;
}

inline bool decode_record(const MDB_val& v, RecordHeader& h, std::string_view& text) {
    if (v.mv_size < sizeof(RecordHeader)) return false;
    std::memcpy(&h, v.mv_data, sizeof h);
    text = std::string_view(static_cast<const char*>(v.mv_data) + sizeof h, v.mv_size - sizeof h);
    return true;
}

}  // namespace agentsensus
