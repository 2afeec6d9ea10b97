// check_pages (cpp/include/agentsensus/page_check.hpp) on LMDB files damaged in known ways: each
// kind of damage is reported in its own words, a sound file gives nothing,
// and deep=false walks the main tree only.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "agentsensus/page_check.hpp"
#include "check.hpp"
#include "lmdb/lmdb_env.hpp"
#include "temp_dir.hpp"

using namespace agentsensus;

namespace {

// LMDB 0.9's layout on 64-bit builds (mdb.c: MDB_meta, MDB_db, MDB_page,
// MDB_node), as far as these tests poke at it.
constexpr size_t kMetaAt = 16, kDbs = 24, kDb = 48, kLastPg = 120, kTxnId = 128;
constexpr size_t kHdr = 16;
constexpr uint16_t kLeaf = 0x02, kOverflow = 0x04, kSubData = 0x02;

template <class T> T get_at(const std::string& b, size_t off) {
    T v;
    std::memcpy(&v, b.data() + off, sizeof v);
    return v;
}
template <class T> void set_at(std::string& b, size_t off, T v) { std::memcpy(&b[off], &v, sizeof v); }

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_file(const std::string& path, const std::string& b) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// A store-shaped LMDB file: a small table "t", a table "big" whose one value
// spills into overflow pages, and a duplicate table "dups".
struct File {
    TempDir dir;
    std::string path = dir.path() + "/data.mdb";
    std::string bytes;
    uint32_t psize = 0;
    size_t meta = 0;  // offset of the newest meta

    File() {
        {
            Env env(dir.path(), Env::Options{});
            MDB_dbi t = env.open_db("t", 0), big = env.open_db("big", 0),
                    dups = env.open_db("dups", MDB_DUPSORT | MDB_DUPFIXED);
            env.write([&](MDB_txn* txn) {
                for (int i = 0; i < 50; ++i) {
                    std::string k = "key" + std::to_string(i), v(20, char('a' + i % 26));
                    put(txn, t, val(k), val(v));
                }
                std::string large(3 * 4096, 'x');
                put(txn, big, val("one", 3), val(large));
                for (uint64_t i = 0; i < 10; ++i) put(txn, dups, val("d", 1), val(&i, 8));
            });
        }
        bytes = read_file(path);
        psize = get_at<uint32_t>(bytes, kMetaAt + kDbs);  // the free list's md_pad holds the page size
        size_t m1 = psize + kMetaAt;
        meta = get_at<uint64_t>(bytes, m1 + kTxnId) > get_at<uint64_t>(bytes, kMetaAt + kTxnId) ? m1 : kMetaAt;
    }
    uint64_t main_root() const { return get_at<uint64_t>(bytes, meta + kDbs + kDb + 40); }
    size_t page(uint64_t pgno) const { return static_cast<size_t>(pgno) * psize; }
    // The node of the main tree's root leaf whose key is name (a table record).
    size_t table_node(const std::string& name) const {
        size_t p = page(main_root());
        uint16_t lower = get_at<uint16_t>(bytes, p + 12);
        for (size_t i = 0; i < (lower - kHdr) / 2u; ++i) {
            size_t node = p + get_at<uint16_t>(bytes, p + kHdr + 2 * i);
            uint16_t ksize = get_at<uint16_t>(bytes, node + 6);
            if (bytes.compare(node + 8, ksize, name) == 0) return node;
        }
        return 0;
    }
    std::vector<std::string> check(bool deep) {
        write_file(path, bytes);
        return check_pages(dir.path(), deep);
    }
};

bool has(const std::vector<std::string>& problems, const std::string& part) {
    for (const std::string& p : problems)
        if (p.find(part) != std::string::npos) return true;
    return false;
}

std::string all(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += "[" + x + "]";
    return s;
}

}  // namespace

TEST(a_sound_file_has_no_problems) {
    File f;
    CHECK_EQ(all(f.check(true)), std::string(""));
    CHECK_EQ(all(f.check(false)), std::string(""));
}

TEST(a_page_that_names_another_number) {
    File f;
    uint64_t root = f.main_root();
    set_at<uint64_t>(f.bytes, f.page(root), root + 1000);
    auto p = f.check(false);
    CHECK(
        has(p, "data.mdb: main tree page " + std::to_string(root) + " says it is page " + std::to_string(root + 1000)));
}

TEST(a_header_whose_bounds_cross) {
    File f;
    size_t p = f.page(f.main_root());
    set_at<uint16_t>(f.bytes, p + 12, 4000);  // lower above upper
    set_at<uint16_t>(f.bytes, p + 14, 100);
    CHECK(has(f.check(false), "has a damaged header (lower 4000, upper 100)"));
}

TEST(a_page_of_the_wrong_type) {
    File f;
    set_at<uint16_t>(f.bytes, f.page(f.main_root()) + 10, 0x10);
    CHECK(has(f.check(false), "has page type 16 where a tree page belongs"));
}

TEST(a_node_outside_its_page) {
    File f;
    size_t p = f.page(f.main_root());
    set_at<uint16_t>(f.bytes, p + kHdr, 2);  // node 0 at offset 2: inside the header
    CHECK(has(f.check(false), "node 0 starts outside the page (offset 2)"));
}

TEST(a_file_cut_short_before_its_pages) {
    File f;
    f.bytes.resize(2 * f.psize);  // the two meta pages only
    auto p = f.check(false);
    CHECK(has(p, "main tree page " + std::to_string(f.main_root()) + " lies outside the file (2 pages)"));
}

TEST(a_page_reached_twice) {
    File f;
    size_t node = f.table_node("t");
    CHECK(node != 0);
    if (!node) return;
    CHECK(get_at<uint16_t>(f.bytes, node + 4) & kSubData);
    // Table t's root now points at the main tree's root page.
    uint16_t ksize = get_at<uint16_t>(f.bytes, node + 6);
    set_at<uint64_t>(f.bytes, node + 8 + ksize + 40, f.main_root());
    auto deep = f.check(true);
    CHECK(has(deep, "table 't' page " + std::to_string(f.main_root()) + " is reached twice"));
    CHECK_EQ(all(f.check(false)), std::string(""));  // the main tree alone is sound
}

TEST(an_overflow_run_that_is_not_one) {
    File f;
    size_t found = 0;
    uint64_t last = get_at<uint64_t>(f.bytes, f.meta + kLastPg);
    for (uint64_t pg = 2; pg <= last && !found; ++pg)
        if (get_at<uint64_t>(f.bytes, f.page(pg)) == pg && (get_at<uint16_t>(f.bytes, f.page(pg) + 10) & kOverflow))
            found = f.page(pg);
    CHECK(found != 0);
    if (!found) return;
    uint64_t pg = found / f.psize;
    set_at<uint16_t>(f.bytes, found + 10, kLeaf);
    CHECK(has(f.check(true), "overflow page " + std::to_string(pg) + " is not an overflow page"));
    CHECK_EQ(all(f.check(false)), std::string(""));  // only the deep walk follows tables
}

TEST(an_overflow_run_shorter_than_its_data) {
    File f;
    size_t found = 0;
    uint64_t last = get_at<uint64_t>(f.bytes, f.meta + kLastPg);
    for (uint64_t pg = 2; pg <= last && !found; ++pg)
        if (get_at<uint64_t>(f.bytes, f.page(pg)) == pg && (get_at<uint16_t>(f.bytes, f.page(pg) + 10) & kOverflow))
            found = f.page(pg);
    CHECK(found != 0);
    if (!found) return;
    set_at<uint32_t>(f.bytes, found + 12, 1);  // mp_pages: one page for 12 KiB
    CHECK(has(f.check(true), "is shorter than its data"));
}

TEST(meta_pages_that_are_not_lmdb) {
    File f;
    f.bytes.resize(10);
    CHECK_EQ(all(f.check(true)), std::string("[data.mdb: the file is too short to hold a meta page]"));
    File g;
    set_at<uint32_t>(g.bytes, kMetaAt, 0x12345678);  // the magic
    CHECK_EQ(all(g.check(true)), std::string("[data.mdb: the first meta page is not an LMDB meta page]"));
}

TEST(a_missing_file_is_reported_not_thrown) {
    TempDir d;
    auto p = check_pages(d.path(), true);
    CHECK(p.size() == 1 && p[0].rfind("data.mdb: cannot be opened", 0) == 0);
}

CHECK_MAIN
