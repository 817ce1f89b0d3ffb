// The headers compile as C++17 (with -Wall -Wextra -Werror -pedantic and
// the stricter warnings tests/c_abi.rs adds): graphcore.h's declarations
// have C linkage, and graphcore.hpp, the C++ layer, compiles after it with
// every template instantiated. (tests/c/hpp.cpp checks what they do.)
#include "graphcore.h"
#include "graphcore.hpp"

#include <utility>
#include <vector>

static_assert(sizeof(gc_status) == sizeof(int), "gc_status is an int-sized enum");

// Instantiates every owner and overload; runs only the parts that need no
// handle (empty owners, moves, check of a success).
static void instantiate(bool call) {
    graphcore::context c;
    graphcore::stream s;
    graphcore::pool p;
    graphcore::module m;
    graphcore::function f;
    graphcore::graph g;
    graphcore::exec e;
    graphcore::runner r;
    graphcore::context c2(std::move(c));
    c = std::move(c2);
    graphcore::check(GC_SUCCESS);
    (void)(s.release() == nullptr && p.get() == nullptr && m.get() == nullptr);
    (void)(f.get() == nullptr && e.get() == nullptr && r.get() == nullptr && g.get() == nullptr);
    if (call) {  // never taken: these would throw without handles
        const std::vector<gc_node> deps;
        const gc_dim3 one{1, 1, 1};
        graphcore::graph_add_kernel(g, f, one, one, 0, nullptr, deps);
        graphcore::graph_add_kernel(g, f, one, one, 0, nullptr, {});
        graphcore::graph_add_memcpy(g, nullptr, nullptr, 0, deps);
        graphcore::graph_add_memcpy(g, nullptr, nullptr, 0);
        graphcore::graph_add_memset(g, nullptr, 0, 0, deps);
        graphcore::graph_add_memset(g, nullptr, 0, 0);
        graphcore::graph_add_host(g, nullptr, nullptr, deps);
        graphcore::graph_add_host(g, nullptr, nullptr);
        graphcore::graph_add_child(g, g, deps);
        graphcore::graph_add_child(g, g);
        graphcore::graph_add_empty(g, deps);
        graphcore::graph_add_empty(g);
        graphcore::capture cap(s, p, GC_CAPTURE_RELAXED);
        graphcore::graph captured = cap.end();
        graphcore::exec e2(captured, GC_INSTANTIATE_UPLOAD);
        graphcore::stream s2(c), s3 = graphcore::stream::wrap(c, nullptr);
        graphcore::pool p2(c, nullptr);
        graphcore::module m2(c, nullptr, 0);
        graphcore::function f2(m2, "k"), f3 = graphcore::function::builtin(c, "k"),
                                         f4 = graphcore::function::wrap(c, nullptr, "k");
        graphcore::runner r2(c, p2);
        graphcore::graph g2(c);
        graphcore::context c3(0);
    }
}

int main(int argc, char **) {
    instantiate(argc > 99);
    try {
        graphcore::check(GC_ERROR_NOT_FOUND);
    } catch (const graphcore::error &e) {
        if (e.status() != GC_ERROR_NOT_FOUND) return 1;
    }
    return gc_version() == GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH
               ? 0
               : 1;
}
