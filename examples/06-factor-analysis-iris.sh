#!/usr/bin/env bash
# Factor analysis of Iris: one factor, a noise variance per measurement, and what a Heywood
# case looks like (a noise variance heading for 0: the factor explains that measurement
# entirely; EM would crawl towards the boundary, so principal tries such a variance at the
# floor, 1e-12, keeps it there when the likelihood is higher, and converges).
#
# Then two factors with a varimax rotation, whose loadings are easier to read, scored per row.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

principal fit "$ROOT/data/iris.csv" --exclude species --model factor-analysis -k 1 \
    --output "$OUT/iris-fa1.model"
principal inspect "$OUT/iris-fa1.model"

principal fit "$ROOT/data/iris.csv" --exclude species --model factor-analysis -k 2 \
    --rotation varimax --max-iterations 2000 --output "$OUT/iris-fa2.model"
principal inspect --json "$OUT/iris-fa2.model" | head -20
principal transform "$OUT/iris-fa2.model" "$ROOT/data/iris.csv" --exclude species \
    --output "$OUT/iris-factors.csv"
principal score "$OUT/iris-fa2.model" "$ROOT/data/iris.csv" --exclude species \
    --output "$OUT/iris-fa-loglik.csv"
head -3 "$OUT/iris-factors.csv"
