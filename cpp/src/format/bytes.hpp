// Fixed-width encodings for LMDB keys and values. Keys are big-endian so that
// LMDB's memcmp order is numeric order; values are native (LMDB files are not
// portable across byte orders anyway).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace agentsensus {

struct Be64 {
    unsigned char b[8];
    explicit Be64(uint64_t v) {
        for (int i = 7; i >= 0; --i) {
            b[i] = static_cast<unsigned char>(v & 0xff);
            v >>= 8;
        }
    }
};

struct Be32 {
    unsigned char b[4];
    explicit Be32(uint32_t v) {
        for (int i = 3; i >= 0; --i) {
            b[i] = static_cast<unsigned char>(v & 0xff);
            v >>= 8;
        }
    }
};

inline uint64_t read_be64(const void* p) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | c[i];
    return v;
}

inline uint32_t read_be32(const void* p) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | c[i];
    return v;
}

template <class T> inline T load(const void* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

template <class T> inline void append(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// A forward reader over a value, bounds-checked: a short value means a
// damaged file, never an out-of-bounds read.
class Reader {
public:
    Reader(const void* p, size_t n) : p_(static_cast<const char*>(p)), n_(n) {}
    bool has(size_t k) const { return n_ - off_ >= k; }
    template <class T> bool get(T& v) {
        if (!has(sizeof(T))) return false;
        std::memcpy(&v, p_ + off_, sizeof(T));
        off_ += sizeof(T);
        return true;
    }
    bool get_bytes(size_t k, std::string_view& out) {
        if (!has(k)) return false;
        out = std::string_view(p_ + off_, k);
        off_ += k;
        return true;
    }
    std::string_view rest() const { return std::string_view(p_ + off_, n_ - off_); }

private:
    const char* p_;
    size_t n_;
    size_t off_ = 0;
};

}  // namespace agentsensus
