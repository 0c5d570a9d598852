// text_table.hpp - a table for the terminal: columns sized to their widest
// cell, the first column left-aligned, the others right-aligned.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace rocl_bench::compare {

// Columns sized to their widest cell; the first column left-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::FILE *out) const {
    std::vector<std::size_t> width;
    for (const auto &row : rows_) {
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto &row : rows_) {
      std::string line;
      for (std::size_t i = 0; i < row.size(); ++i) {
        const std::string pad(width[i] - row[i].size(), ' ');
        line += i == 0 ? row[i] + pad : "  " + pad + row[i];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      std::fprintf(out, "  %s\n", line.c_str());
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace rocl_bench::compare
