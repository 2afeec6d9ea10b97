// A structural check of an LMDB data file that reads it with pread, never
// through LMDB's memory map. Our LMDB patch (cmake/lmdb-validate-pages.patch)
// refuses a damaged page when a read reaches it; this walk finds damage in
// every page first, so that `agentsensus check` and Store::verify report all
// of it, also in pages no read reaches. Its rules match the patch's.
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
