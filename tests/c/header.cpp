// The header compiles as C++17 (with -Wall -Wextra -Werror -pedantic) and
// its declarations have C linkage.
#include "graphcore.h"

static_assert(sizeof(gc_status) == sizeof(int), "gc_status is an int-sized enum");

int main() {
    return gc_version() == GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH
               ? 0
               : 1;
}
