// PostingCounts (cpp/src/lexical/posting_counts.hpp): a count is served at a
// snapshot only if it was read there, or read earlier with nothing but this
// handle's own commits in between, moved by exactly what they added and
// removed.
#include "lexical/posting_counts.hpp"

#include <string>

#include "check.hpp"

using namespace agentsensus;

TEST(a_count_is_served_at_the_snapshot_it_was_read_at) {
    PostingCounts c;
    CHECK(!c.find(5, "alpha"));
    c.remember(5, "alpha", 3);
    CHECK_EQ(c.find(5, "alpha").value_or(0), size_t{3});
    CHECK(!c.find(5, "beta"));
}

TEST(own_commits_carry_the_counts_moved_by_what_they_changed) {
    PostingCounts c;
    c.remember(5, "alpha", 3);
    c.remember(5, "beta", 1);
    c.remember(5, "gamma", 2);
    c.began(6);
    c.moved(6, "beta", 1);  // write transaction 6 adds two postings of beta
    c.moved(6, "beta", 1);
    c.moved(6, "gamma", -1);  // and removes one of gamma
    c.moved(6, "delta", 1);   // a word whose count nobody read
    c.committed(6);
    c.committed(7);  // a commit that changed no postings
    CHECK_EQ(c.find(7, "alpha").value_or(0), size_t{3});
    CHECK_EQ(c.find(7, "beta").value_or(0), size_t{3});
    CHECK_EQ(c.find(7, "gamma").value_or(0), size_t{1});
    CHECK(!c.find(7, "delta"));
}

TEST(a_move_below_zero_drops_the_count) {
    PostingCounts c;
    c.remember(5, "alpha", 1);
    c.began(6);
    c.moved(6, "alpha", -2);  // not the count the commit changed
    c.committed(6);
    CHECK(!c.find(6, "alpha"));
}

TEST(another_commit_in_between_empties_them) {
    PostingCounts c;
    c.remember(5, "alpha", 3);
    c.committed(6);
    // 7 was not this handle's (another process's): nothing read at 5 holds at 8
    c.committed(8);
    CHECK(!c.find(8, "alpha"));
    c.remember(8, "alpha", 4);
    CHECK_EQ(c.find(8, "alpha").value_or(0), size_t{4});
}

TEST(an_older_snapshot_is_not_served_and_does_not_move_them) {
    PostingCounts c;
    c.remember(9, "alpha", 2);
    CHECK(!c.find(7, "alpha"));
    c.remember(7, "alpha", 1);  // read at 7: not remembered over 9's
    CHECK_EQ(c.find(9, "alpha").value_or(0), size_t{2});
}

TEST(an_attempt_that_did_not_commit_drops_the_keys_it_moved) {
    PostingCounts c;
    c.remember(5, "alpha", 3);
    c.remember(5, "beta", 1);
    c.remember(5, "gamma", 4);
    c.began(6);
    c.moved(6, "alpha", 1);  // aborted: never committed
    c.moved(6, "beta", 1);
    c.began(6);  // the retry, same id: its moves are not added to the first's
    c.moved(6, "beta", 1);
    c.moved(6, "gamma", 1);
    c.committed(6);
    CHECK(!c.find(6, "alpha"));
    CHECK(!c.find(6, "beta"));
    CHECK_EQ(c.find(6, "gamma").value_or(0), size_t{5});
}

TEST(notes_of_an_id_that_never_committed_are_not_the_next_ids) {
    PostingCounts c;
    c.remember(5, "alpha", 3);
    c.began(6);
    c.moved(6, "alpha", 1);
    c.began(7);  // 6 committed unseen: its notes are not 7's, and a reader empties the counts
    c.moved(7, "beta", 1);
    c.committed(7);
    CHECK(!c.find(7, "alpha"));
}

TEST(a_commit_a_reader_got_ahead_of_is_not_applied_later) {
    PostingCounts c;
    c.remember(5, "alpha", 3);
    CHECK(!c.find(6, "alpha"));  // 6 not yet known as this handle's: emptied
    c.remember(6, "alpha", 4);
    c.began(6);
    c.moved(6, "alpha", 1);
    c.committed(6);  // arrives late: the counts at 6 were read after it
    CHECK_EQ(c.find(6, "alpha").value_or(0), size_t{4});
}

TEST(a_rebuild_changes_every_key) {
    PostingCounts c;
    c.remember(5, "alpha", 3);
    c.changing_all(6);
    c.committed(6);
    CHECK(!c.find(6, "alpha"));
}

TEST(many_unread_commits_are_not_kept_without_bound) {
    PostingCounts c;
    c.remember(1, "alpha", 3);
    for (uint64_t t = 2; t < 200; ++t) c.committed(t);
    // the commits between were this handle's, but more than it keeps:
    // the counts were dropped rather than carried
    CHECK(!c.find(199, "alpha"));
    c.remember(199, "alpha", 5);
    CHECK_EQ(c.find(199, "alpha").value_or(0), size_t{5});
}

int main() { return check::run_all(); }
