// The wire encoding of Planfence head queries and answers. Its byte size is
// what Check.bytes reports, so it is kept small on purpose: keys sorted and
// front-coded, numbers as LEB128 varints, no digests on the wire (the owner
// compares digests itself and answers one bit).
//
//   query  := 0x01 varint(n) { varint(shared) varint(len) suffix varint(recorded) }*n
//   answer := 0x01 varint(n) { varint(head << 1 | same) }*n     (head 0: unknown key)
//
// `shared` is the length of the prefix a key shares with the previous key of
// the query; `same` says the head's content digest equals the recorded
// version's (the early cutoff).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentsensus {

constexpr unsigned char kHeadsCodecVersion = 0x01;

inline void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// A bounds-checked reader of an untrusted message: any short or malformed
// input makes ok() false, never an out-of-bounds read.
class WireReader {
public:
    explicit WireReader(std::string_view s) : s_(s) {}
    bool ok() const { return ok_; }
    bool done() const { return off_ == s_.size(); }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (off_ >= s_.size()) return fail();
            unsigned char c = static_cast<unsigned char>(s_[off_++]);
            v |= uint64_t(c & 0x7f) << shift;
            if (!(c & 0x80)) return v;
        }
        return fail();
    }
    unsigned char byte() {
        if (off_ >= s_.size()) return static_cast<unsigned char>(fail());
        return static_cast<unsigned char>(s_[off_++]);
    }
    std::string_view bytes(uint64_t n) {
        if (n > s_.size() - off_) {
            fail();
            return {};
        }
        std::string_view r = s_.substr(off_, n);
        off_ += n;
        return r;
    }

private:
    uint64_t fail() {
        ok_ = false;
        off_ = s_.size();
        return 0;
    }
    std::string_view s_;
    size_t off_ = 0;
    bool ok_ = true;
};

struct HeadQuery {
    std::string key;
    uint64_t recorded = 0;
};

struct HeadAnswer {
    uint64_t head = 0;  // 0: the owner does not know the key
    bool same = false;  // head's digest equals the recorded version's
};

// Writes a query entry by entry, so callers need not copy keys into
// HeadQuery. Each key must stay alive until the next add (it is the prefix
// the next key is coded against); add exactly n entries.
class QueryEncoder {
public:
    QueryEncoder(std::string& out, size_t n) : out_(out) {
        out_.clear();
        out_.push_back(static_cast<char>(kHeadsCodecVersion));
        put_varint(out_, n);
    }
    void add(std::string_view key, uint64_t recorded) {
        size_t shared = 0;
        size_t lim = prev_.size() < key.size() ? prev_.size() : key.size();
        while (shared < lim && prev_[shared] == key[shared]) ++shared;
        put_varint(out_, shared);
        put_varint(out_, key.size() - shared);
        out_.append(key.substr(shared));
        put_varint(out_, recorded);
        prev_ = key;
    }

private:
    std::string& out_;
    std::string_view prev_;
};

// Entries must be sorted by key (front coding assumes it, for size only:
// decoding is correct for any order).
inline std::string encode_query(const std::vector<HeadQuery>& q) {
    std::string out;
    QueryEncoder enc(out, q.size());
    for (const HeadQuery& e : q) enc.add(e.key, e.recorded);
    return out;
}

// One entry of a decoded query, still front-coded: its key is the first
// `shared` bytes of the previous entry's key followed by `suffix` (a view
// into the query). next_key rebuilds the keys in order without allocating.
struct QueryEntry {
    size_t shared = 0;
    std::string_view suffix;
    uint64_t recorded = 0;
};

inline void next_key(std::string& key, const QueryEntry& e) {
    key.resize(e.shared);
    key.append(e.suffix);
}

// False on a malformed query.
inline bool decode_query_entries(std::string_view in, std::vector<QueryEntry>& out, size_t max_entries) {
    WireReader r(in);
    if (r.byte() != kHeadsCodecVersion) return false;
    uint64_t n = r.varint();
    if (!r.ok() || n > max_entries || n > in.size()) return false;
    out.clear();
    out.reserve(n);
    uint64_t prev_len = 0;
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t shared = r.varint();
        uint64_t len = r.varint();
        if (!r.ok() || shared > prev_len) return false;
        std::string_view suffix = r.bytes(len);
        uint64_t recorded = r.varint();
        if (!r.ok()) return false;
        out.push_back(QueryEntry{static_cast<size_t>(shared), suffix, recorded});
        prev_len = shared + len;
    }
    return r.done();
}

// False on a malformed query.
inline bool decode_query(std::string_view in, std::vector<HeadQuery>& out, size_t max_entries) {
    std::vector<QueryEntry> entries;
    if (!decode_query_entries(in, entries, max_entries)) return false;
    out.clear();
    out.reserve(entries.size());
    std::string key;
    for (const QueryEntry& e : entries) {
        next_key(key, e);
        out.push_back(HeadQuery{key, e.recorded});
    }
    return true;
}

inline void encode_answer(const std::vector<HeadAnswer>& a, std::string& out) {
    out.clear();
    out.reserve(2 + a.size() * 2);
    out.push_back(static_cast<char>(kHeadsCodecVersion));
    put_varint(out, a.size());
    for (const HeadAnswer& e : a) {
        if (e.head >> 63) {
            put_varint(out, 0);  // unrepresentable: say unknown, which blocks
            continue;
        }
        put_varint(out, (e.head << 1) | (e.same ? 1 : 0));
    }
}

inline std::string encode_answer(const std::vector<HeadAnswer>& a) {
    std::string out;
    encode_answer(a, out);
    return out;
}

// False on a malformed answer or one of another length than expected.
inline bool decode_answer(std::string_view in, size_t expected, std::vector<HeadAnswer>& out) {
    WireReader r(in);
    if (r.byte() != kHeadsCodecVersion) return false;
    uint64_t n = r.varint();
    if (!r.ok() || n != expected) return false;
    out.assign(n, HeadAnswer{});
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t v = r.varint();
        if (!r.ok()) return false;
        out[i].head = v >> 1;
        out[i].same = (v & 1) != 0;
    }
    return r.done();
}

}  // namespace agentsensus
