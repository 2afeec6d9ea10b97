#include "agentsensus/page_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace agentsensus {

namespace {

// LMDB 0.9 on-disk layout (64-bit): see mdb.c (MDB_page, MDB_node, MDB_db).
constexpr size_t kHdr = 16, kNode = 8, kDb = 48, kMetaAt = 16, kMaxKey = 511;
constexpr uint16_t kBranch = 0x01, kLeaf = 0x02, kOverflow = 0x04, kLeaf2 = 0x20, kSubp = 0x40;
constexpr uint16_t kBigData = 0x01, kSubData = 0x02, kDupData = 0x04;
constexpr uint64_t kInvalid = ~uint64_t(0);
constexpr size_t kMaxProblems = 100;

// A name read from a damaged file, safe to print: printable ASCII as is,
// anything else as \xNN (messages must be valid UTF-8 for Python).
std::string printable(const unsigned char* p, size_t n) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
            out += static_cast<char>(p[i]);
        } else {
            out += "\\x";
            out += hex[p[i] >> 4];
            out += hex[p[i] & 15];
        }
    }
    return out;
}

template <class T> T at(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

struct Tree {
    uint64_t root;
    uint16_t flags;  // MDB_db.md_flags
    uint32_t ksize;  // MDB_db.md_pad: key size of LEAF2 pages
    bool main;       // the main tree: F_SUBDATA nodes there are named tables
    std::string name;
};

class Walker {
public:
    Walker(int fd, uint32_t psize, uint64_t npages) : fd_(fd), psize_(psize), npages_(npages), seen_(npages, 0) {}

    std::vector<std::string> problems;

    void walk(const Tree& t) {
        if (t.root == kInvalid) return;
        std::vector<std::pair<uint64_t, unsigned>> stack{{t.root, 0}};
        std::vector<unsigned char> page(psize_);
        while (!stack.empty() && problems.size() < kMaxProblems) {
            auto [pgno, depth] = stack.back();
            stack.pop_back();
            std::string where = t.name + " page " + std::to_string(pgno);
            if (depth > 64) return bad(where + " is deeper than any LMDB tree can be");
            if (!claim(pgno, 1, where)) continue;
            if (!read(pgno, page.data())) return bad(where + " cannot be read");
            const unsigned char* p = page.data();
            if (at<uint64_t>(p) != pgno) {
                bad(where + " says it is page " + std::to_string(at<uint64_t>(p)));
                continue;
            }
            // P_SUBP (0x40) too: LMDB refuses a sub-page flag on a page.
            uint16_t flags = at<uint16_t>(p + 10) & 0x7f;
            if (flags == kBranch) {
                std::vector<uint64_t> kids;
                if (!nodes(p, psize_, where, true, t, &kids)) continue;
                for (uint64_t k : kids) stack.emplace_back(k, depth + 1);
            } else if (flags == kLeaf) {
                nodes(p, psize_, where, false, t, nullptr);
            } else if (flags == (kLeaf | kLeaf2)) {
                leaf2(p, psize_, t.ksize, where);
            } else {
                bad(where + " has page type " + std::to_string(flags) + " where a tree page belongs");
            }
        }
    }

    void bad(std::string s) {
        if (problems.size() < kMaxProblems) problems.push_back("data.mdb: " + std::move(s));
    }

private:
    bool read(uint64_t pgno, unsigned char* out) {
        return pread(fd_, out, psize_, static_cast<off_t>(pgno * psize_)) == static_cast<ssize_t>(psize_);
    }

    // Marks pages [pgno, pgno+n) as used; false (with a report) when out of
    // the file or already used by another part of a tree.
    bool claim(uint64_t pgno, uint64_t n, const std::string& where) {
        if (pgno < 2 || n == 0 || pgno >= npages_ || n > npages_ - pgno) {
            bad(where + " lies outside the file (" + std::to_string(npages_) + " pages)");
            return false;
        }
        for (uint64_t i = pgno; i < pgno + n; ++i) {
            if (seen_[i]) {
                bad(where + " is reached twice (page " + std::to_string(i) + ")");
                return false;
            }
            seen_[i] = 1;
        }
        return true;
    }

    // Checks a page's header and its nodes; p has `size` bytes. Branch
    // children go to kids; leaf data is followed into overflow pages,
    // sub-pages and sub-trees.
    bool nodes(const unsigned char* p, size_t size, const std::string& where, bool branch, const Tree& t,
               std::vector<uint64_t>* kids) {
        uint16_t lower = at<uint16_t>(p + 12), upper = at<uint16_t>(p + 14);
        if (lower < kHdr || lower > upper || upper > size || (lower - kHdr) % 2) {
            bad(where + " has a damaged header (lower " + std::to_string(lower) + ", upper " + std::to_string(upper) +
                ")");
            return false;
        }
        size_t n = (lower - kHdr) / 2;
        // LMDB never writes an empty page, and refuses one (it would read node 0).
        if (n == 0) {
            bad(where + " is an empty page");
            return false;
        }
        for (size_t i = 0; i < n; ++i) {
            uint16_t off = at<uint16_t>(p + kHdr + 2 * i);
            std::string node = where + " node " + std::to_string(i);
            if (off < upper || off + kNode > size) {
                bad(node + " starts outside the page (offset " + std::to_string(off) + ")");
                return false;
            }
            const unsigned char* nd = p + off;
            uint16_t lo = at<uint16_t>(nd), hi = at<uint16_t>(nd + 2), nflags = at<uint16_t>(nd + 4),
                     ksize = at<uint16_t>(nd + 6);
            if (ksize > kMaxKey || off + kNode + ksize > size) {
                bad(node + " has a key of " + std::to_string(ksize) + " bytes that does not fit");
                return false;
            }
            if (branch) {
                kids->push_back(uint64_t(lo) | uint64_t(hi) << 16 | uint64_t(nflags) << 32);
                continue;
            }
            uint64_t dsize = uint64_t(lo) | uint64_t(hi) << 16;
            const unsigned char* data = nd + kNode + ksize;
            if (nflags & kBigData) {
                if (off + kNode + ksize + 8 > size) return bad(node + " has a damaged overflow reference"), false;
                overflow(at<uint64_t>(data), dsize, node);
                continue;
            }
            if (off + kNode + ksize + dsize > size) {
                bad(node + " has " + std::to_string(dsize) + " bytes of data that do not fit");
                return false;
            }
            if (nflags & kSubData) {
                if (dsize != kDb) return bad(node + " holds a damaged table record"), false;
                std::string name = t.main && !(nflags & kDupData) ? "table '" + printable(nd + kNode, ksize) + "'"
                                                                  : t.name + " duplicates";
                pending_.push_back(
                    Tree{at<uint64_t>(data + 40), at<uint16_t>(data + 4), at<uint32_t>(data), false, name});
            } else if (nflags & kDupData) {
                subpage(data, dsize, node);
            }
        }
        return true;
    }

    void leaf2(const unsigned char* p, size_t size, uint32_t ksize, const std::string& where) {
        uint16_t lower = at<uint16_t>(p + 12);
        if (lower < kHdr + 2 || (lower - kHdr) % 2 || ksize == 0 || ksize > kMaxKey ||
            kHdr + (lower - kHdr) / 2 * size_t(ksize) > size)
            bad(where + " (fixed-size keys) has a damaged header");
    }

    void subpage(const unsigned char* p, uint64_t dsize, const std::string& where) {
        std::string sub = where + " sub-page";
        if (dsize < kHdr) return bad(sub + " is too short");
        uint16_t flags = at<uint16_t>(p + 10) & 0x7f;
        if (flags & kLeaf2) return leaf2(p, dsize, at<uint16_t>(p + 8), sub);
        if ((flags & (kBranch | kLeaf | kOverflow | kSubp | 0x08)) != (kLeaf | kSubp))
            return bad(sub + " has page type " + std::to_string(flags));
        Tree none{kInvalid, 0, 0, false, ""};
        nodes(p, dsize, sub, false, none, nullptr);
    }

    void overflow(uint64_t pgno, uint64_t dsize, const std::string& where) {
        std::string o = where + " overflow page " + std::to_string(pgno);
        if (pgno < 2 || pgno >= npages_) return bad(o + " lies outside the file");
        unsigned char h[kHdr];
        if (pread(fd_, h, kHdr, static_cast<off_t>(pgno * psize_)) != static_cast<ssize_t>(kHdr))
            return bad(o + " cannot be read");
        uint32_t pages = at<uint32_t>(h + 12);
        if (at<uint64_t>(h) != pgno || !(at<uint16_t>(h + 10) & kOverflow)) return bad(o + " is not an overflow page");
        if (dsize + kHdr > uint64_t(pages) * psize_) return bad(o + " is shorter than its data");
        claim(pgno, pages, o);
    }

public:
    std::vector<Tree> pending_;

private:
    int fd_;
    uint32_t psize_;
    uint64_t npages_;
    std::vector<unsigned char> seen_;
};

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

namespace {

struct NewestMeta {
    std::string error;  // set when there is no usable meta
    uint32_t psize = 0;
    uint64_t txnid = 0, last = 0;
    unsigned char dbs[2 * kDb];
};

// The newer of the two metas, as LMDB picks it.
NewestMeta newest_meta(int fd) {
    NewestMeta r;
    unsigned char m[2][kMetaAt + 136];
    bool ok[2] = {false, false};
    for (int i = 0; i < 2; ++i) {
        off_t off = i == 0 ? 0 : r.psize;
        if (pread(fd, m[i], sizeof m[i], off) != static_cast<ssize_t>(sizeof m[i])) {
            if (i == 0) {
                r.error = "data.mdb: the file is too short to hold a meta page";
                return r;
            }
            continue;
        }
        const unsigned char* p = m[i] + kMetaAt;
        uint32_t ps = at<uint32_t>(p + 24);
        ok[i] = at<uint32_t>(p) == 0xBEEFC0DE && at<uint32_t>(p + 4) == 1 && ps >= 512 && ps <= 65536 &&
                (ps & (ps - 1)) == 0 && (i == 0 || ps == r.psize);
        if (i == 0) {
            if (!ok[0]) {
                r.error = "data.mdb: the first meta page is not an LMDB meta page";
                return r;
            }
            r.psize = ps;
        }
    }
    int use = ok[1] && at<uint64_t>(m[1] + kMetaAt + 128) > at<uint64_t>(m[0] + kMetaAt + 128) ? 1 : 0;
    const unsigned char* meta = m[use] + kMetaAt;
    r.last = at<uint64_t>(meta + 120);
    r.txnid = at<uint64_t>(meta + 128);
    std::memcpy(r.dbs, meta + 24, sizeof r.dbs);
    return r;
}

}  // namespace

std::vector<std::string> check_pages(const std::string& dir, bool deep) {
    std::string path = dir + "/data.mdb";
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) return {"data.mdb: cannot be opened: " + std::string(std::strerror(errno))};
    std::vector<std::string> problems;
    // A writer in another process may commit during the walk and, two
    // commits later, reuse pages of the tree being walked. Damage only
    // counts if the meta walked is still the newest afterwards; otherwise
    // walk the new one.
    for (int attempt = 0; attempt < 8; ++attempt) {
        NewestMeta m = newest_meta(f.fd);
        if (!m.error.empty()) return {m.error};
        struct stat st;
        if (fstat(f.fd, &st) != 0) return {"data.mdb: cannot be read"};
        // A file may end before its last free pages (LMDB): pages past the
        // end must then be unreachable, and reaching one is reported.
        uint64_t npages = static_cast<uint64_t>(st.st_size) / m.psize;
        Walker w(f.fd, m.psize, std::min<uint64_t>(npages, m.last + 1));
        const unsigned char* dbs = m.dbs;
        w.walk(Tree{at<uint64_t>(dbs + kDb + 40), at<uint16_t>(dbs + kDb + 4), at<uint32_t>(dbs + kDb), true,
                    "main tree"});
        if (deep) {
            w.walk(Tree{at<uint64_t>(dbs + 40), at<uint16_t>(dbs + 4), at<uint32_t>(dbs), false, "free list"});
            while (!w.pending_.empty() && w.problems.size() < kMaxProblems) {
                Tree t = w.pending_.back();
                w.pending_.pop_back();
                w.walk(t);
            }
        }
        problems = std::move(w.problems);
        if (problems.empty()) return problems;
        NewestMeta after = newest_meta(f.fd);
        if (after.error.empty() && after.txnid == m.txnid) return problems;
    }
    return problems;
}

}  // namespace agentsensus
