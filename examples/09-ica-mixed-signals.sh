#!/usr/bin/env bash
# Blind source separation: a sine, a square wave and a sawtooth (2000 samples) mixed into
# three "microphones"; FastICA recovers the sources up to order, sign and scale. The script
# prints each true source's best |correlation| with a recovered one (close to 1).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

awk 'BEGIN {
    print "s1,s2,s3" > "'"$OUT"'/ica-sources.csv"
    print "m1,m2,m3"
    pi = atan2(0, -1)
    for (i = 0; i < 2000; i++) {
        t = 8 * i / 1999
        s1 = sin(2 * t); s2 = (sin(3 * t) >= 0) ? 1 : -1
        u = t - int(t); s3 = 2 * u - 1
        print s1 "," s2 "," s3 > "'"$OUT"'/ica-sources.csv"
        print s1 + s2 + s3 "," 0.5 * s1 + 2 * s2 + s3 "," 1.5 * s1 + s2 + 2 * s3
    }
}' > "$OUT/ica-mixed.csv"

principal fit "$OUT/ica-mixed.csv" --model ica -k 3 --fun logcosh --seed 0 \
    --output "$OUT/ica.model"
principal transform "$OUT/ica.model" "$OUT/ica-mixed.csv" --output "$OUT/ica-recovered.csv"
paste -d, "$OUT/ica-sources.csv" "$OUT/ica-recovered.csv" | awk -F, 'NR > 1 {
    n++
    for (a = 1; a <= 3; a++) { t[a] += $a; tt[a] += $a * $a
        for (b = 1; b <= 3; b++) { r = $(3 + b); ts[a, b] += $a * r } }
    for (b = 1; b <= 3; b++) { s[b] += $(3 + b); ss[b] += $(3 + b) * $(3 + b) }
} END {
    for (a = 1; a <= 3; a++) {
        best = 0
        for (b = 1; b <= 3; b++) {
            c = (ts[a, b] / n - t[a] / n * s[b] / n) / sqrt((tt[a] / n - (t[a] / n) ^ 2) * (ss[b] / n - (s[b] / n) ^ 2))
            if (c < 0) c = -c
            if (c > best) best = c
        }
        printf "true source %d: best |correlation| with a recovered source %.4f\n", a, best
    }
}'
