#include "engine/load_progress.h"

#include <unistd.h>

#include <cstdio>

#include "engine/dev_api.h"  // format_bytes

namespace tessera {

std::function<void(size_t, size_t)> load_progress_printer() {
  if (!isatty(2)) return {};
  return [last = -1](size_t done, size_t total) mutable {
    const int pct = total ? static_cast<int>(100.0 * done / total) : 100;
    if (pct == last) return;
    last = pct;
    const int w = 40, fill = pct * w / 100;
    std::fprintf(stderr, "\rloading [%.*s%*s] %3d%% %s / %s", fill,
                 "########################################", w - fill, "", pct,
                 dev::format_bytes(done).c_str(), dev::format_bytes(total).c_str());
  };
}

}  // namespace tessera
