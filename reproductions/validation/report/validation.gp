# Projected vs measured step time
#
# Written by `parasim report`. Edit freely, then re-render from this folder with
#   gnuplot validation.gp
# Reads: validation.csv (next to this script). Writes validation.png and validation.svg.
# validation.csv: projected_ms, measured_ms, error_pct ((projected - measured) / measured x 100), label
if (!exists("png_file")) png_file = "validation.png"
if (!exists("svg_file")) svg_file = "validation.svg"

set encoding utf8
set datafile separator comma
set datafile columnheaders

# Okabe & Ito colour-blind-safe palette (Wong, Nature Methods 8:441, 2011)
black = "#000000"; orange = "#E69F00"; sky_blue = "#56B4E9"; bluish_green = "#009E73"
yellow = "#F0E442"; blue = "#0072B2"; vermillion = "#D55E00"; reddish_purple = "#CC79A7"
grey = "#7F7F7F"; light_grey = "#C8C8C8"

set border 3 lw 1 lc rgb "#404040"
set tics nomirror out scale 0.6
set grid back lc rgb "#E4E4E4" lw 1 dt 1
set key outside right top vertical Left reverse samplen 2.5 spacing 1.2 box lc rgb "#C8C8C8"
set title font ",14"

data = "validation.csv"
set title "Projected vs measured step time\n12 runs, median |error| 5.72 %, max 22.6 %"
set xlabel "measured step time (ms, log scale)"
set ylabel "projected step time (ms, log scale)"
set logscale xy 10
set xrange [0.35086599999999996:1356.930648]
set yrange [0.35086599999999996:1356.930648]
set size square
set samples 200
set style fill solid 1.0 noborder
set key inside top left opaque box

set terminal pngcairo size 900,700 font "sans,11" noenhanced background rgb "white"
set output png_file
plot '+' using 1:(0.8 * $1):(1.2 * $1) with filledcurves fc rgb "#DCEBF7" title "±20 %", \
     '+' using 1:(0.9 * $1):(1.1 * $1) with filledcurves fc rgb "#A9CCEB" title "±10 %", \
     x with lines lc rgb black dt 2 lw 1.5 title "projected = measured", \
     data using "measured_ms":"projected_ms" with points pt 7 ps 1.4 lc rgb vermillion title "runs"
set terminal svg size 900,700 dynamic font "sans,11" noenhanced background rgb "white"
set output svg_file
replot
unset output
