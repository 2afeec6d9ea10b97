// A structural check of an LMDB data file that reads it with pread, never
// through LMDB's memory map. LMDB trusts its pages: a damaged node offset,
// size or page number in data.mdb makes LMDB read outside the file and the
// process dies (SIGBUS/SIGSEGV). This walk finds such damage first, so that
// `agentsensus check` and Store::verify report it instead of crashing.
#pragma once
#include <string>
#include <vector>

namespace agentsensus {

// Walks the trees reachable from the newest meta page of dir/data.mdb and
// checks page numbers, page types, header bounds, node offsets and sizes, and
// that no page is reached twice. deep=false walks the main tree only (the
// table directory every open reads: a page or two); deep=true also the free
// list, every named table, every duplicate sub-tree and sub-page, and every
// overflow run. Returns each problem in plain words; empty when sound. Safe
// while another process writes (it re-walks when a commit lands meanwhile).
std::vector<std::string> check_pages(const std::string& dir, bool deep);

}  // namespace agentsensus
