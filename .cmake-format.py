# cmake-format (Debian's cmake-format package): the style of every
# CMakeLists.txt and *.cmake; .ci/run's format stage checks it
# (cmake-format --check), `cmake-format -i FILE` applies it.
with section("parse"):
    # rocl's own helpers (cmake/RoclHelpers.cmake, tests/multiproc), so that
    # their keywords are laid out as keywords.
    additional_commands = {
        "rocl_sources": {"pargs": "*"},
        "rocl_test": {
            "kwargs": {"NAME": 1, "TIMEOUT": 1, "SOURCES": "+", "LABELS": "+", "LIBS": "+"}
        },
        "rocl_install_tool": {"pargs": "+"},
        "roclrun_pair_test": {"pargs": "+"},
    }

with section("format"):
    line_width = 100  # as .clang-format's ColumnLimit
    tab_size = 2
    command_case = "lower"
    keyword_case = "upper"
    # Lists of files and words fill lines instead of one per line.
    max_pargs_hwrap = 24
    max_subgroups_hwrap = 6
    dangle_parens = False
    # A call too long for one line continues on the next lines, indented,
    # rather than hanging under its first argument.
    max_lines_hwrap = 0

with section("markup"):
    enable_markup = False  # comments stay as written
