// plots.cpp - the PNG plots of a comparison (see results.hpp): latency,
// bandwidth and message rate against the size, and the message rate against
// the thread pairs; one line per system, log axes. The data (<name>.dat, one
// block per system) and the gnuplot script (plots.gp) stay beside the
// images, so that a plot can be redrawn or restyled by hand.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "results.hpp"

namespace rocl_bench::compare {
namespace {

const std::vector<PlotSpec> kComparePlots = {
    {"p2p", "latency", "latency", "message size (bytes)", "one-way latency (us)", false},
    {"p2p", "bandwidth", "bandwidth", "message size (bytes)", "one-way bandwidth (GB/s)", false},
    {"p2p", "rate", "rate", "message size (bytes)", "message rate (M msg/s)", false},
    {"threads", "threads", "threads", "thread pairs", "message rate, 8 B (M msg/s)", true},
};

std::string quoted(const std::string &text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// Writes <file>.dat; returns the systems in block order.
std::vector<std::string> write_data(const std::string &path, const StageRun &run,
                                    const PlotSpec &p) {
  std::map<std::string, std::vector<std::pair<double, double>>> lines;
  std::vector<std::string> order;
  for (const auto &s : run.summary) {
    if (s.metric != p.metric || !is_sane(s.median)) continue;
    if (lines.count(s.system) == 0) order.push_back(s.system);
    lines[s.system].emplace_back(p.by_pairs ? s.pairs : static_cast<double>(s.size), s.median);
  }
  std::ofstream out(path);
  for (const auto &system : order) {
    auto &points = lines[system];
    std::sort(points.begin(), points.end());
    out << "# " << system << "\n";
    for (const auto &[x, y] : points) out << x << " " << y << "\n";
    out << "\n\n";
  }
  return out ? order : std::vector<std::string>{};
}

// rocl's lines thick, the limits dashed black; anchors thin, each with its
// own point type, dashed by class (tcp dashes, inproc dots) since gnuplot's
// eight colours repeat.
std::string style(const StageRun &run, const std::string &system, std::size_t index) {
  if (system.rfind("rocl", 0) == 0) return "linespoints lw 3 pt 7";
  if (system == "memcpy") return "lines dt 2 lw 2 lc rgb 'black'";
  const Config *c = run.config(system);
  const std::string cls = c != nullptr ? c->cls : "";
  const char *dash = cls == "tcp" ? " dt 3" : cls == "inproc" ? " dt 4" : "";
  return "linespoints lw 1 pt " + std::to_string(1 + index % 12) + dash;
}

std::string title_of(const std::string &system) {
  if (system == "memcpy") return "memcpy (limit)";
  if (system == "cacheline") return "cache line (limit)";
  return system;
}

}  // namespace

const std::vector<PlotSpec> &compare_plots() {
  return kComparePlots;
}

std::string write_plots(const std::string &folder, const Results &results,
                        const std::vector<PlotSpec> &plot_specs, const std::string &title,
                        const std::string &gnuplot, const std::string &log,
                        std::vector<std::string> &written) {
  // pngcairo draws better; the libgd png terminal is the fallback.
  Invocation probe{{gnuplot, "-e", "set terminal pngcairo"}, {}, log, 30};
  const std::string terminal = run_child(probe).ok() ? "pngcairo" : "png";
  const std::string script = folder + "/plots.gp";
  std::ofstream gp(script);
  int plots = 0;
  std::vector<std::string> pngs;
  for (const auto &p : plot_specs) {
    const StageRun *run = results.find(p.stage);
    if (run == nullptr) continue;
    const std::string data = folder + "/" + p.file + ".dat";
    const auto systems = write_data(data, *run, p);
    if (systems.empty()) continue;
    gp << "set terminal " << terminal << " size 1100,700\n"
       << "set output " << quoted(folder + "/" + p.file + ".png") << "\n"
       << "set title " << quoted(title + ": " + p.ylabel) << "\n"
       << "set xlabel " << quoted(p.xlabel) << "\nset ylabel " << quoted(p.ylabel) << "\n"
       << "set logscale xy\nset grid\nset key outside right\n"
       << (p.by_pairs ? "set xtics 2\nset format x '%g'\n" : "set xtics 4\nset format x '%.0b%B'\n")
       << "plot ";
    for (std::size_t i = 0; i < systems.size(); ++i) {
      // the cache line is one point (64 B)
      const bool level = systems[i] == "cacheline";
      gp << (i == 0 ? "" : ", \\\n     ") << quoted(data) << " index " << i << " using "
         << (level ? "1:2 with points pt 5 ps 2 lc rgb 'black'"
                   : ("1:2 with " + style(*run, systems[i], i)))
         << " title " << quoted(title_of(systems[i]));
    }
    gp << "\nunset format\n\n";
    ++plots;
    pngs.push_back(folder + "/" + p.file + ".png");
  }
  gp.close();
  if (!gp) return "cannot write " + script;
  if (plots == 0) return "";
  Invocation draw{{gnuplot, script}, {}, log, 120};
  const ChildResult r = run_child(draw);
  if (!r.ok()) return "gnuplot " + r.describe() + ": " + failure_line(read_file(log));
  written = pngs;
  return "";
}

}  // namespace rocl_bench::compare
