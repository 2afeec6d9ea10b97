// pybind11 glue for CommitPlan: built by keyword (_deposit/plan.py), with
// None for "no expected/kept text", "no metadata" and "supersedes nothing", vectors one float32
// row per statement.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine.hpp"

namespace agentsensus_py {

namespace {

std::vector<std::string> texts_or_empty(const py::list& l) {
    std::vector<std::string> out;
    out.reserve(l.size());
    for (const py::handle& e : l) out.push_back(e.is_none() ? std::string() : e.cast<std::string>());
    return out;
}

CommitPlan make_plan(std::string owner, uint32_t round, std::vector<std::string> texts, const py::bytes& digests,
                     const F32& vectors, std::vector<int64_t> targets, const py::list& expected, const py::list& kept,
                     const py::object& metadata, std::string scope, const py::object& supersedes) {
    CommitPlan p;
    p.owner = std::move(owner);
    p.round = round;
    p.scope = std::move(scope);
    p.texts = std::move(texts);
    p.digests = digests;
    if (vectors.ndim() != 2 || static_cast<size_t>(vectors.shape(0)) != p.texts.size())
        throw InvalidArgument("a commit plan's vectors must be one row per statement");
    p.vectors.resize(static_cast<size_t>(vectors.size()));
    std::memcpy(p.vectors.data(), vectors.data(), p.vectors.size() * sizeof(float));
    p.targets = std::move(targets);
    p.expected = texts_or_empty(expected);
    p.kept = texts_or_empty(kept);
    if (!metadata.is_none()) p.metadata = texts_or_empty(metadata.cast<py::list>());
    if (!supersedes.is_none()) p.supersedes = supersedes.cast<std::vector<int64_t>>();
    return p;
}

}  // namespace

void bind_commit_plan(py::module_& m) {
    py::class_<CommitPlan>(m, "CommitPlan", "One deposit's plan for Engine.commit (CommitPlan, agentsensus/rows.hpp).")
        .def(py::init(&make_plan), py::kw_only(), py::arg("owner"), py::arg("round"), py::arg("texts"),
             py::arg("digests"), py::arg("vectors"), py::arg("targets"), py::arg("expected"), py::arg("kept"),
             py::arg("metadata") = py::none(), py::arg("scope") = std::string(), py::arg("supersedes") = py::none())
        .def_readonly("owner", &CommitPlan::owner)
        .def_readonly("round", &CommitPlan::round)
        .def_readonly("scope", &CommitPlan::scope)
        .def_readonly("texts", &CommitPlan::texts)
        .def_readonly("targets", &CommitPlan::targets)
        .def_readonly("supersedes", &CommitPlan::supersedes);
}

}  // namespace agentsensus_py
