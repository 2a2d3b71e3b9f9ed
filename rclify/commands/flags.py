"""rclify flags: what a build needs to compile and link against the runtime."""

from rclify import runtime_build


def add_parser(sub):
    p = sub.add_parser("flags", help="print compiler/linker flags for the runtime (builds it if needed)")
    p.add_argument("--cflags", action="store_true", help="flags to compile transformed code")
    p.add_argument("--libs", action="store_true", help="flags to link against the runtime")
    p.add_argument("--pkgconfig", action="store_true", help="path of the pkg-config directory")
    p.add_argument("--cmake", action="store_true",
                   help="directory of the CMake package config (cmake -Drclify_DIR=...; find_package(rclify))")
    return p


def run(args) -> int:
    runtime_build.build_runtime()
    words = []
    if args.pkgconfig:
        words.append(str(runtime_build.PKGCONFIG_FILE.parent))
    if args.cmake:
        words.append(str(runtime_build.CMAKE_CONFIG.parent))
    path_only = args.pkgconfig or args.cmake
    if args.cflags or not (args.libs or path_only):
        words += runtime_build.cflags()
    if args.libs or not (args.cflags or path_only):
        words += runtime_build.libs()
    print(" ".join(words))
    return 0
