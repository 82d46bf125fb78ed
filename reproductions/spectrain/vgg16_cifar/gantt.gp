# One simulated training step as a Gantt chart
#
# Written by `parasim report`. Edit freely, then re-render from this folder with
#   gnuplot gantt.gp
# Reads: gantt_plot.csv (next to this script). Writes gantt.png and gantt.svg.
# gantt_plot.csv: row (y position), device, lane (stream), start_ns, end_ns, category_index, tasks (bars
#   merged into this one), category. Devices with identical rows are drawn once; gantt.csv has every
#   task of every device (device, lane, start_ns, end_ns, category_index, category, label).
if (!exists("png_file")) png_file = "gantt.png"
if (!exists("svg_file")) svg_file = "gantt.svg"

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

data = "gantt_plot.csv"
unit_ns = 1e+06  # ns per ms

# Categories drawn (category_index in the CSV), their legend text and colour.
array category_index[5] = [0, 1, 2, 4, 5]
array category_title[5] = ["forward", "backward", "update", "communication", "other"]
array category_colour[5] = [blue, orange, bluish_green, vermillion, grey]

set title "One simulated training step"
set xlabel "time (ms)"
set xrange [0.0:85.473376]
set yrange [7.5:-0.5]  # first device at the top
set grid xtics noytics
set ytics scale 0 ("GPU 0 compute" 0, "GPU 0 stream 2" 1, "GPU 1 compute" 2, "GPU 1 stream 2" 3, "GPU 2 compute" 4, "GPU 2 stream 2" 5, "GPU 3 compute" 6, "GPU 3 stream 2" 7)
# Thin lines between devices.
set arrow from graph 0, first 1.5 to graph 1, first 1.5 nohead back lc rgb "#B0B0B0" lw 1
set arrow from graph 0, first 3.5 to graph 1, first 3.5 nohead back lc rgb "#B0B0B0" lw 1
set arrow from graph 0, first 5.5 to graph 1, first 5.5 nohead back lc rgb "#B0B0B0" lw 1
set style fill solid 1.0 noborder
half_height = 0.38

set terminal pngcairo size 1100,360 font "sans,11" noenhanced background rgb "white"
set output png_file
plot for [k=1:|category_index|] data \
     using ((column("start_ns") + column("end_ns")) / 2 / unit_ns) \
          :(column("category_index") == category_index[k] ? column("row") : NaN) \
          :((column("end_ns") - column("start_ns")) / 2 / unit_ns):(half_height) \
     with boxxyerror lc rgb category_colour[k] title category_title[k]
set terminal svg size 1100,360 dynamic font "sans,11" noenhanced background rgb "white"
set output svg_file
replot
unset output
