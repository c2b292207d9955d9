package docs

import (
	"strings"
	"testing"
)

const sample = `# Title

## Checklist

| rule | status | how | proved by |
| --- | --- | --- | --- |
| A | met | x \| y | ` + "`a TestA`" + ` |

### Second table

| rule | mandatory | status | proved by |
| :--- | --- | ---: | --- |
| B | No | not met | none |

## Other

| rule | status | proved by |
| --- | --- | --- |
| C | met | not read |
`

func TestParseChecklist(t *testing.T) {
	rows, err := ParseChecklist(sample, "Checklist")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the 2 of the section's two tables: %+v", len(rows), rows)
	}
	if r := rows[0]; r.Line != 7 || r.Cells[ColumnRule] != "A" || r.Cells["how"] != "x | y" || r.Cells[ColumnProvedBy] != "`a TestA`" {
		t.Errorf("first row %+v", r)
	}
	if r := rows[1]; r.Line != 13 || r.Cells[ColumnStatus] != "not met" || r.Cells["mandatory"] != "No" {
		t.Errorf("second row %+v", r)
	}
}

func TestParseChecklistRefusesWhatItCannotRead(t *testing.T) {
	for name, tc := range map[string]struct{ markdown, want string }{
		"no such heading":     {"## Other\n", "no heading"},
		"no table":            {"## Checklist\ntext\n", "no table"},
		"a column missing":    {"## Checklist\n| rule | status |\n| --- | --- |\n| A | met |\n", `no column "proved by"`},
		"no delimiter row":    {"## Checklist\n| rule | status | proved by |\n| A | met | x |\n", "not a delimiter row"},
		"a stray pipe":        {"## Checklist\n| rule | status | proved by |\n| --- | --- | --- |\n| A | met | x | y |\n", "line 4: 4 cells"},
		"a row cut short":     {"## Checklist\n| rule | status | proved by |\n| --- | --- | --- |\n| A | met |\n", "line 4: 2 cells"},
		"a header only table": {"## Checklist\n| rule | status | proved by |\n", "without a delimiter row"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseChecklist(tc.markdown, "Checklist")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
