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
set title "Projected vs measured step time\n8 runs, median |error| 20.4 %, max 54.2 %"
set xlabel "measured step time (ms, log scale)"
set ylabel "projected step time (ms, log scale)"
set logscale xy 10
set xrange [0.3854946666666667:680.2671435]
set yrange [0.3854946666666667:680.2671435]
set size square
set samples 200
set style fill solid 1.0 noborder
set key inside top left opaque box

# Point labels (kept here rather than read from the CSV: gnuplot splits quoted fields at commas).
set label 1 "tiny_cnn dp=2 (cpu)" at 1.388675, 0.883304 offset 0.8,0.6 font ",9" front
set label 2 "tiny_cnn dp=2 (cpu)" at 0.684073, 0.578242 offset 0.8,0.6 font ",9" front
set label 3 "tiny_cnn dp=3 (cpu)" at 1.378205, 0.631148 offset 0.8,0.6 font ",9" front
set label 4 "tiny_cnn mp=2,schedule=gpipe,micro=4 (cpu)" at 1.402957, 1.428633 offset 0.8,0.6 font ",9" front
set label 5 "tiny_lstm mp=2,schedule=gpipe,micro=2 (cpu)" at 5.836629, 4.926027 offset 0.8,0.6 font ",9" front
set label 6 "tiny_lstm mp=2,schedule=interleaved,micro=4,interleave=2 (cpu)" at 4.585747, 4.431479 offset 0.8,0.6 font ",9" front
set label 7 "googlenet_cifar dp=2 (cpu)" at 230.303256, 323.911503 offset 0.8,0.6 font ",9" front
set label 8 "gpt2 tp=2 (cpu)" at 362.401354, 453.511429 offset 0.8,0.6 font ",9" front

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
