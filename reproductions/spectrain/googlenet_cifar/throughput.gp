# Training throughput per strategy
#
# Written by `parasim report`. Edit freely, then re-render from this folder with
#   gnuplot throughput.gp
# Reads: throughput.csv (next to this script). Writes throughput.png and throughput.svg.
# throughput.csv: index, samples_per_s, speedup (over the first row), step_time_ms, gpus, global_batch, feasible (1/0), strategy, cluster
if (!exists("png_file")) png_file = "throughput.png"
if (!exists("svg_file")) svg_file = "throughput.svg"

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

data = "throughput.csv"
set title "Samples per second, one simulated step per strategy"
set ylabel "samples / s"
set xrange [-0.6:6.6]
set yrange [0:2666.490639639658]
set grid noxtics ytics
set boxwidth 0.7
set style fill solid 1.0 border lc rgb "white"
unset key
set xtics ("dp=4" 0, "dp=1" 1, "mp=4" 2, "mp=4,\nschedule=gpipe,\nmicro=8" 3, "mp=4,\nschedule=1f1b,\nmicro=8" 4, "mp=4,\nschedule=pipedream" 5, "mp=4,\nschedule=spectrain" 6) font ",9"
set bmargin 5
# lc rgb variable takes numbers: vermillion, grey and blue of the palette above.
colour(f, i) = f == 0 ? 0xD55E00 : (i == 0 ? 0x7F7F7F : 0x0072B2)
label(x) = sprintf("%.2f×", x)

set terminal pngcairo size 1000,600 font "sans,11" noenhanced background rgb "white"
set output png_file
plot data using "index":"samples_per_s":(colour(column("feasible"), column("index"))) with boxes lc rgb variable notitle, \
     data using "index":"samples_per_s":(label(column("speedup"))) with labels offset 0,0.7 notitle
set terminal svg size 1000,600 dynamic font "sans,11" noenhanced background rgb "white"
set output svg_file
replot
unset output
