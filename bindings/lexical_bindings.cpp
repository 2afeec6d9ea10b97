// pybind11 glue for the lexical index: Engine.lexical_built, build_lexical,
// lexical (a deposit's lexical candidates) and recall_fused. Conversion and
// GIL release only.
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine.hpp"

namespace agentsensus_py {

void bind_lexical(py::module_& m) {
    auto engine = py::reinterpret_borrow<py::class_<Engine>>(m.attr("Engine"));
    engine.def_property_readonly(
        "lexical_built",
        [](Engine& e) {
            auto u = e.use();
            Store& st = *u;
            py::gil_scoped_release nogil;
            return st.lexical_built();
        },
        "True when the store's lexical index is complete.");
    engine.def(
        "build_lexical",
        [](Engine& e, const py::object& progress) {
            auto u = e.use();
            Store& st = *u;
            std::function<void(uint64_t, uint64_t)> report;
            if (!progress.is_none())
                report = [&progress](uint64_t done, uint64_t total) {
                    py::gil_scoped_acquire gil;
                    progress(done, total);
                };
            py::gil_scoped_release nogil;
            st.build_lexical(report);
        },
        py::arg("progress") = py::none(), "Indexes every record's words; progress(done, total) as it goes.");
    engine.def(
        "lexical_word_counts",
        [](Engine& e, const std::vector<std::string>& texts,
           const std::vector<std::tuple<int64_t, std::string, bool>>& overlay, const std::string& scope) {
            auto u = e.use();
            Store& st = *u;
            std::vector<LexicalOverlay> ov;
            for (const auto& [id, text, hit] : overlay) ov.push_back(LexicalOverlay{id, text, hit});
            LexicalWordCounts r;
            {
                py::gil_scoped_release nogil;
                r = st.lexical_word_counts(texts, ov, scope);
            }
            py::list words;
            for (const auto& ws : r.words) {
                py::list one;
                for (const auto& [w, tf, df] : ws) one.append(py::make_tuple(py::bytes(w), tf, df));
                words.append(one);
            }
            return py::make_tuple(r.docs, r.avgdl, words);
        },
        py::arg("texts"), py::arg("overlay"), py::arg("scope") = "",
        "(records, mean length, per text [(word, count in the text, records holding it)]): the scope's BM25 "
        "statistics for each text's words, as the overlay leaves the scope.");
    engine.def(
        "lexical",
        [](Engine& e, const F32& vectors, const std::vector<std::string>& texts, size_t k,
           const std::vector<std::tuple<int64_t, std::string, bool>>& overlay,
           const std::vector<std::vector<int64_t>>& also, const std::string& scope,
           const std::vector<std::vector<int64_t>>& exclude, double floor, double mutual, double min_similarity,
           const std::vector<std::optional<std::vector<int64_t>>>& only) {
            auto u = e.use();
            Store& st = *u;
            const size_t n = texts.size();
            const float* v = rows_of(vectors, n, st.dim(), "vectors");
            if (also.size() != n) throw InvalidArgument("lexical: also must have one list per text");
            if (!exclude.empty() && exclude.size() != n)
                throw InvalidArgument("lexical: exclude must have one list per text, or none");
            if (!only.empty() && only.size() != n)
                throw InvalidArgument("lexical: only must have one entry per text, or none");
            std::vector<LexicalQuery> qs(n);
            for (size_t i = 0; i < n; ++i) {
                LexicalQuery& q = qs[i];
                q.text = texts[i];
                q.vector = v + i * st.dim();
                q.also = also[i];
                if (!exclude.empty()) q.exclude = exclude[i];
                q.floor = floor;
                q.mutual = mutual;
                q.min_similarity = min_similarity;
                if (!only.empty()) q.only = only[i];
            }
            std::vector<LexicalOverlay> ov;
            for (const auto& [id, text, hit] : overlay) ov.push_back(LexicalOverlay{id, text, hit});
            LexicalAnswer r;
            {
                py::gil_scoped_release nogil;
                r = st.lexical(qs, k, ov, scope);
            }
            py::array_t<int64_t> ids(r.hits.size());
            py::array_t<float> scores(r.hits.size()), sims(r.hits.size());
            auto pi = ids.mutable_unchecked<1>();
            auto ps = scores.mutable_unchecked<1>();
            auto pm = sims.mutable_unchecked<1>();
            for (size_t i = 0; i < r.hits.size(); ++i) {
                pi(i) = r.hits[i].id;
                ps(i) = r.hits[i].score;
                pm(i) = r.similarity[i];
            }
            py::dict records;
            for (const Row& row : r.records)
                records[py::int_(row.id)] = py::make_tuple(stored_str(row.text), owners_tuple(row.owners), row.round);
            return py::make_tuple(r.offsets, ids, scores, sims, r.also, records, r.least, r.most_of);
        },
        py::arg("vectors"), py::arg("texts"), py::arg("k"), py::arg("overlay"), py::arg("also"), py::arg("scope") = "",
        py::arg("exclude") = std::vector<std::vector<int64_t>>{}, py::arg("floor") = 0.0, py::arg("mutual") = 0.0,
        py::arg("min_similarity") = -std::numeric_limits<double>::infinity(),
        py::arg("only") = std::vector<std::optional<std::vector<int64_t>>>{},
        "(offsets, ids, lexical scores, similarities, also scores, records, least scores, most-of scores): each "
        "text's lexical top k, less the ids of its exclude list; floor > 0 weighs each text as lexical_floor does, "
        "and hits below its least score may be left out; mutual > 0 (with a floor) leaves out the hits reaching it "
        "whose mutual coverage with the text is below mutual; a committed hit less similar than min_similarity to "
        "its text's vector is left out unless it scores at least the text's most-of score (half its best possible "
        "score; infinity when it has none); only (one entry per text, or none): a list, the ids the text's hits may "
        "be, scored without a search (with a gate, the scope is searched for the hits reaching the most-of score), "
        "or None for a search of the scope.");
    engine.def(
        "recall_fused",
        [](Engine& e, const std::string& owner, const F32& query, const std::string& text, size_t k, bool expand) {
            auto u = e.use();
            Store& st = *u;
            if (query.ndim() != 1 || static_cast<size_t>(query.shape(0)) != st.dim())
                throw InvalidArgument("query vector must have shape (" + std::to_string(st.dim()) + ",)");
            std::vector<Row> rows;
            std::vector<float> lexical;
            {
                py::gil_scoped_release nogil;
                rows = st.recall_fused(owner, query.data(), text, k, expand, lexical);
            }
            py::list out;
            for (size_t i = 0; i < rows.size(); ++i) out.append(py::make_tuple(row_tuple(rows[i]), lexical[i]));
            return out;
        },
        py::arg("owner"), py::arg("query"), py::arg("text"), py::arg("k"), py::arg("expand"),
        "[(row, lexical score)]: recall with the vector and lexical rankings fused.");
}

}  // namespace agentsensus_py
