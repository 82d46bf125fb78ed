# Peak memory per device per strategy against device capacity
#
# Written by `parasim report`. Edit freely, then re-render from this folder with
#   gnuplot memory.gp
# Reads: memory_plot.csv (next to this script). Writes memory.png and memory.svg.
# memory_plot.csv: x (bar position), first_device, last_device (identical neighbours share a bar),
#   peak_bytes, capacity_bytes (0 = unknown), params/grads/optimizer/activations/other_bytes at the peak,
#   strategy
if (!exists("png_file")) png_file = "memory.png"
if (!exists("svg_file")) svg_file = "memory.svg"

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

data = "memory_plot.csv"
unit_bytes = 1073741824.0  # bytes per GiB
set title "Peak memory per device against its capacity"
set ylabel "peak memory (GiB)"
set yrange [0:35.84]
set xrange [-0.7:24.7]
set grid noxtics ytics
set boxwidth 0.7
set style fill solid 1.0 border lc rgb "white"
set xtics ("dp=8" 0.0, "dp=4,mp=2,\nschedule=interleaved,\nmicro=2,interleave=6" 1.6, "dp=16" 3.2, "dp=8,mp=2,\nschedule=interleaved,\nmicro=2,interleave=6" 4.8, "dp=32" 6.4, "dp=16,mp=2,\nschedule=interleaved,\nmicro=2,interleave=6" 8.0, "dp=64" 9.6, "dp=32,mp=2,\nschedule=interleaved,\nmicro=2,interleave=5" 11.2, "dp=128" 12.8, "dp=64,mp=2,\nschedule=interleaved,\nmicro=2,interleave=5" 14.4, "dp=256" 16.0, "dp=128,mp=2,\nschedule=interleaved,\nmicro=2,interleave=5" 17.6, "dp=512" 19.2, "dp=128,mp=4,\nschedule=interleaved,\nmicro=4,interleave=5" 20.8, "dp=1024" 22.4, "dp=256,mp=4,\nschedule=interleaved,\nmicro=4,interleave=5" 24.0) rotate by 45 right font ",9"
set bmargin 12
set lmargin 14

# Cumulative stacks, drawn tallest first so each shorter one covers the bottom of the previous.
params(c) = column("params_bytes") / unit_bytes
grads(c) = params(c) + column("grads_bytes") / unit_bytes
optimizer(c) = grads(c) + column("optimizer_bytes") / unit_bytes
activations(c) = optimizer(c) + column("activations_bytes") / unit_bytes
other(c) = activations(c) + column("other_bytes") / unit_bytes
peak(c) = column("peak_bytes") / unit_bytes
capacity(c) = column("capacity_bytes") > 0 ? column("capacity_bytes") / unit_bytes : NaN
over(c) = column("capacity_bytes") > 0 && column("peak_bytes") > column("capacity_bytes") ? "over capacity" : ""

set terminal pngcairo size 1000,700 font "sans,11" noenhanced background rgb "white"
set output png_file
plot data using "x":(activations(0)) with boxes lc rgb orange title "activations", \
     data using "x":(optimizer(0)) with boxes lc rgb bluish_green title "optimizer state", \
     data using "x":(grads(0)) with boxes lc rgb sky_blue title "gradients", \
     data using "x":(params(0)) with boxes lc rgb blue title "parameters", \
     data using (column("x") - 0.45):(capacity(0)):(0.9):(0) with vectors nohead lc rgb black dt 1 lw 2.5 title "device capacity", \
     data using "x":(peak(0)):(over(0)) with labels offset 0,0.8 tc rgb vermillion notitle
set terminal svg size 1000,700 dynamic font "sans,11" noenhanced background rgb "white"
set output svg_file
replot
unset output
