# Spindle's Cloud Spanner DDL, one statement per list element.
#
# schema/spanner_v<N>.sql and the list ddl_files below are generated from the control
# plane's schema, controlplane/store/schema/spanner_v<N>.sql, by
# `python scripts/gen_copies.py` (tests/packaging/test_generated_copies.py fails when
# they are not current): edit the control plane's files, never these. They are split
# the way spindle.controlplane.store._spanner_schema.load_ddl splits them: comment
# lines ("--") dropped, statements separated by a semicolon at the end of a line.
#
# A later schema version is a new file appended to ddl_files: the google provider
# applies appended statements in place, while editing earlier ones replaces the
# database.

locals {
  ddl_files = ["spanner_v1.sql", "spanner_v2.sql", "spanner_v3.sql", "spanner_v4.sql", "spanner_v5.sql", "spanner_v6.sql", "spanner_v7.sql", "spanner_v8.sql"]

  # Each file is split on its own (as load_ddl does): a file's last statement needs no ";".
  ddl_file_lines = [
    for f in local.ddl_files : [
      for line in split("\n", replace(file("${path.module}/schema/${f}"), "\r", "")) :
      line if !startswith(trimspace(line), "--")
    ]
  ]

  spindle_ddl = flatten([
    for lines in local.ddl_file_lines : [
      for s in split(";\n", replace(join("\n", concat(lines, [""])), "/;[ \\t]*\\n/", ";\n")) :
      trimsuffix(trimspace(s), ";") if trimsuffix(trimspace(s), ";") != ""
    ]
  ])
}
