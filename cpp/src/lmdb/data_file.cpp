#include "lmdb/data_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "agentsensus/errors.hpp"

namespace agentsensus {

namespace {

// LMDB 0.9's on-disk meta page (64-bit builds): a 16-byte page header, then
// MDB_meta: magic, version, address, mapsize, two 48-byte MDB_db (the first's
// md_pad is the page size), last page number, txnid.
constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr uint32_t kDataVersion = 1;
constexpr size_t kPageHeader = 16;
constexpr size_t kMetaBytes = 136;
constexpr size_t kPsizeAt = 24, kLastPageAt = 120, kTxnAt = 128;

struct Meta {
    bool valid = false;
    uint32_t psize = 0;
    uint64_t last_pg = 0, txnid = 0;
};

Meta read_meta(int fd, off_t at) {
    unsigned char b[kPageHeader + kMetaBytes];
    Meta m;
    if (pread(fd, b, sizeof b, at) != static_cast<ssize_t>(sizeof b)) return m;
    const unsigned char* p = b + kPageHeader;
    uint32_t magic, version;
    std::memcpy(&magic, p, 4);
    std::memcpy(&version, p + 4, 4);
    std::memcpy(&m.psize, p + kPsizeAt, 4);
    std::memcpy(&m.last_pg, p + kLastPageAt, 8);
    std::memcpy(&m.txnid, p + kTxnAt, 8);
    // LMDB's page sizes are powers of two from 4 KiB (the OS page) to 64 KiB.
    bool psize_ok = m.psize >= 512 && m.psize <= 65536 && (m.psize & (m.psize - 1)) == 0;
    m.valid = magic == kMagic && version == kDataVersion && psize_ok && m.last_pg >= 1;
    return m;
}

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

void guard_data_file(const std::string& dir, bool writable) {
    std::string path = dir + "/data.mdb";
    Fd f{::open(path.c_str(), writable ? O_RDWR : O_RDONLY)};
    if (f.fd < 0) return;  // absent (a new store) or unreadable: LMDB reports it
    struct stat st;
    if (fstat(f.fd, &st) != 0 || st.st_size == 0) return;
    Meta a = read_meta(f.fd, 0);
    if (!a.valid) return;  // LMDB refuses a file without a valid first meta (MDB_INVALID)
    Meta b = read_meta(f.fd, a.psize);
    // LMDB uses the newer of the two metas; a damaged second one is ignored.
    Meta m = b.valid && b.psize == a.psize && b.txnid > a.txnid ? b : a;
    if (m.last_pg > (uint64_t(1) << 40))
        throw Corrupt("data.mdb in " + dir + " is damaged: its metadata names page " + std::to_string(m.last_pg));
    uint64_t need = (m.last_pg + 1) * uint64_t(m.psize);
    // The size is read after the metas: a concurrent writer only grows the
    // file, and writes a commit's pages before its meta.
    if (fstat(f.fd, &st) != 0) return;
    if (static_cast<uint64_t>(st.st_size) >= need) return;
    if (!writable)
        throw Corrupt("data.mdb in " + dir + " is " + std::to_string(st.st_size) + " bytes, but its metadata needs " +
                      std::to_string(need) + ": the file is truncated (open it writable to check it)");
    // posix_fallocate never shrinks the file, so a writer growing it
    // meanwhile loses nothing.
    int rc = posix_fallocate(f.fd, st.st_size, static_cast<off_t>(need - st.st_size));
    if (rc != 0) throw Corrupt("data.mdb in " + dir + " is truncated and cannot be extended: " + std::strerror(rc));
}

}  // namespace agentsensus
