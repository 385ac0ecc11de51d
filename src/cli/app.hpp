#pragma once
namespace simba::cli {
// The whole command line: parses, dispatches, maps errors to exit codes.
int main(int argc, char** argv);
} // namespace simba::cli
