// Openpedia article data. [[id]] or [[id|text]] marks an internal link.
var OP_CATEGORIES = [
  { id: "country", name: "Country" },
  { id: "cities", name: "Cities and towns" },
  { id: "waters", name: "Rivers and lakes" },
  { id: "mountains", name: "Mountains" },
  { id: "people", name: "People" },
  { id: "engineers", name: "Engineers and inventors" },
  { id: "inventions", name: "Inventions" },
  { id: "structures", name: "Buildings and structures" },
  { id: "institutions", name: "Institutions" }
];

var OP_FEATURED = "aster-bridge";

var OP_DID_YOU_KNOW = [
  "... that the [[lunmouth-lighthouse|Lunmouth Lighthouse]] was the first to be fitted with a [[quell-lens|Quell lens]]?",
  "... that [[marta-oskerin|Marta Oskerin]] was the first woman to hold a professorship at the [[university-of-drennick|University of Drennick]]?",
  "... that the town of [[ashgrove|Ashgrove]] was founded by royal charter to house silver miners?",
  "... that [[lake-mirren|Lake Mirren]] supplies the fine sand used by the glassmakers of [[hollowmere|Hollowmere]]?"
];

var OP_ARTICLES = [
  {
    id: "caldria", title: "Caldria", cats: ["country"],
    lead: "<b>Caldria</b>, officially the Republic of Caldria, is an island nation in the Western Sea. Its capital and largest city is [[port-velin|Port Velin]]. The country is known for its glassmaking, its early railways and a long line of engineers and inventors.",
    infobox: [["Capital", "[[port-velin|Port Velin]]"], ["Largest city", "[[port-velin|Port Velin]]"], ["Official language", "Caldrian"], ["Population", "4,870,000 (2020 census)"], ["Area", "61,400 km²"], ["Currency", "Caldrian mark (CLM)"], ["Government", "Parliamentary republic"], ["Unification", "1589 (Union of Drennick)"], ["Republic declared", "1921"], ["Highest point", "Mount Orrin, 3,104 m ([[kestrel-mountains|Kestrel Mountains]])"], ["Longest river", "[[aster-river|Aster River]], 412 km"]],
    sections: [
      ["History", "The oldest continuously inhabited town is [[drennick|Drennick]], founded in 1188 as the seat of the Sorrel kings. The rival coastal lordships were joined to the Sorrel crown by the Union of Drennick in 1589, after which the royal court moved to [[port-velin|Port Velin]]. Under [[isolde-ii|Queen Isolde II]] the crown developed mining in the [[kestrel-mountains|Kestrel Mountains]]. The monarchy was replaced by a parliamentary republic in 1921."],
      ["Geography", "The north of the island is dominated by the [[kestrel-mountains|Kestrel Mountains]], which feed the country's two great rivers: the [[aster-river|Aster]], which flows east to the Gulf of Velin, and the [[sorrel-river|Sorrel]], which drains [[lake-mirren|Lake Mirren]] and flows south-west to the Western Sea."],
      ["Economy", "Glass, shipbuilding and silver mining were the traditional industries. In the nineteenth century the [[great-northern-railway|Great Northern Railway]] linked the capital with the mining districts, and inventions such as the [[venholm-valve|Venholm valve]] and the [[oskerin-cell|Oskerin cell]] were manufactured for export."]
    ]
  },
  {
    id: "port-velin", title: "Port Velin", cats: ["cities"],
    lead: "<b>Port Velin</b> is the capital and largest city of [[caldria|Caldria]]. It lies at the mouth of the [[aster-river|Aster River]] on the Gulf of Velin and is the country's main port.",
    infobox: [["Country", "[[caldria|Caldria]]"], ["Province", "Velin"], ["Founded", "1312"], ["Population", "1,240,000 (2020)"], ["Elevation", "12 m"], ["River", "[[aster-river|Aster River]]"], ["Mayor", "Hana Lisk"], ["Landmarks", "[[aster-bridge|Aster Bridge]], [[national-library-of-caldria|National Library]]"]],
    sections: [
      ["History", "Port Velin was founded in 1312 by merchants from [[drennick|Drennick]] as a trading post at the mouth of the Aster. It became the royal capital in 1589, after the Union of Drennick. In 1826 the city opened its first public waterworks, whose steam pumps were fitted with the newly invented [[venholm-valve|Venholm valve]]. The [[great-northern-railway|Great Northern Railway]] reached the city in 1871."],
      ["Landmarks", "The city's best-known landmark is the [[aster-bridge|Aster Bridge]] (1938), a suspension bridge designed by [[corwin-bale|Corwin Bale]], who also designed the [[national-library-of-caldria|National Library of Caldria]] (1931)."],
      ["Notable people", "Port Velin is the birthplace of [[isolde-ii|Queen Isolde II]] and of the physicist [[marta-oskerin|Marta Oskerin]]."]
    ]
  },
  {
    id: "drennick", title: "Drennick", cats: ["cities"],
    lead: "<b>Drennick</b> is a city on the [[sorrel-river|Sorrel River]] in central [[caldria|Caldria]]. Founded in 1188, it is the oldest city in the country and home to the [[university-of-drennick|University of Drennick]].",
    infobox: [["Country", "[[caldria|Caldria]]"], ["Province", "Sorrel"], ["Founded", "1188"], ["Population", "212,500 (2020)"], ["Elevation", "140 m"], ["River", "[[sorrel-river|Sorrel River]]"], ["Mayor", "Pell Aubin"], ["University", "[[university-of-drennick|University of Drennick]] (1402)"]],
    sections: [
      ["History", "Drennick grew around a ford of the Sorrel and was the seat of the Sorrel kings until the royal court moved to [[port-velin|Port Velin]] after the Union of Drennick was signed here in 1589. The [[university-of-drennick|university]] was founded in 1402."],
      ["Economy", "Today the city's economy is based on education, publishing and river trade; the Sorrel is navigable from Drennick to [[lunmouth|Lunmouth]]."],
      ["Notable people", "The engineer [[ida-venholm|Ida Venholm]] was born in Drennick in 1791."]
    ]
  },
  {
    id: "hollowmere", title: "Hollowmere", cats: ["cities"],
    lead: "<b>Hollowmere</b> is the second-largest city of [[caldria|Caldria]], on the northern shore of [[lake-mirren|Lake Mirren]] where the [[sorrel-river|Sorrel River]] leaves the lake. It is famous for its glassworks.",
    infobox: [["Country", "[[caldria|Caldria]]"], ["Province", "Mirren"], ["Founded", "1401"], ["Population", "386,000 (2020)"], ["Elevation", "221 m"], ["Lake", "[[lake-mirren|Lake Mirren]]"], ["Mayor", "Soren Vadt"], ["Known for", "Glassmaking"]],
    sections: [
      ["History", "Hollowmere was founded in 1401 as a fishing village. The fine sand of [[lake-mirren|Lake Mirren]] made it a centre of glassmaking, and in 1849 [[tobias-quell|Tobias Quell]] founded the Quell &amp; Sons Glassworks here, where the [[quell-lens|Quell lens]] was later made."],
      ["Transport", "The city is the main intermediate station of the [[great-northern-railway|Great Northern Railway]], which crosses the valley east of the city on the Harsk Viaduct (1869)."],
      ["Notable people", "Hollowmere is the birthplace of [[tobias-quell|Tobias Quell]]. The railway engineer [[leopold-harsk|Leopold Harsk]] died here in 1880."]
    ]
  },
  {
    id: "ashgrove", title: "Ashgrove", cats: ["cities"],
    lead: "<b>Ashgrove</b> is a mountain town in the foothills of the [[kestrel-mountains|Kestrel Mountains]], on the upper [[aster-river|Aster River]]. It was founded in 1655 by [[isolde-ii|Queen Isolde II]] as a silver-mining settlement.",
    infobox: [["Country", "[[caldria|Caldria]]"], ["Province", "Kestrel"], ["Founded", "1655"], ["Founder", "[[isolde-ii|Queen Isolde II]]"], ["Population", "97,300 (2020)"], ["Elevation", "1,020 m"], ["River", "[[aster-river|Aster River]]"], ["Industry", "Silver and copper mining, tourism"]],
    sections: [
      ["History", "[[isolde-ii|Queen Isolde II]] granted Ashgrove its royal charter in 1655 to house miners working the silver veins of the Kestrel range. Copper mining followed in the eighteenth century."],
      ["Transport", "Ashgrove is the northern terminus of the [[great-northern-railway|Great Northern Railway]], opened in 1871, which connects the town to [[port-velin|Port Velin]] via [[hollowmere|Hollowmere]]."],
      ["Notable people", "The civil engineer [[leopold-harsk|Leopold Harsk]], chief engineer of the railway, was born in Ashgrove in 1815."]
    ]
  },
  {
    id: "lunmouth", title: "Lunmouth", cats: ["cities"],
    lead: "<b>Lunmouth</b> is a port city on the Western Sea at the mouth of the [[sorrel-river|Sorrel River]]. It is known for shipbuilding, fishing and the [[lunmouth-lighthouse|Lunmouth Lighthouse]].",
    infobox: [["Country", "[[caldria|Caldria]]"], ["Province", "Sorrel"], ["Founded", "1530"], ["Population", "154,800 (2020)"], ["Elevation", "5 m"], ["River", "[[sorrel-river|Sorrel River]]"], ["Mayor", "Iva Corran"], ["Landmarks", "[[lunmouth-lighthouse|Lunmouth Lighthouse]], Maritime Museum"]],
    sections: [
      ["History", "Lunmouth was founded in 1530 as a harbour for the river trade coming down the Sorrel from [[drennick|Drennick]]. Its shipyards built most of the Caldrian merchant fleet in the eighteenth and nineteenth centuries."],
      ["Landmarks", "The [[lunmouth-lighthouse|Lunmouth Lighthouse]], built in 1794, was the first lighthouse to receive a [[quell-lens|Quell lens]]. The Lunmouth Maritime Museum (1952) was designed by [[corwin-bale|Corwin Bale]]."],
      ["Notable people", "The architect [[corwin-bale|Corwin Bale]] was born in Lunmouth in 1889."]
    ]
  },
  {
    id: "aster-river", title: "Aster River", cats: ["waters"],
    lead: "The <b>Aster River</b> is the longest river in [[caldria|Caldria]]. It rises on the slopes of Mount Orrin in the [[kestrel-mountains|Kestrel Mountains]] and flows east to the Gulf of Velin at [[port-velin|Port Velin]].",
    infobox: [["Length", "412 km"], ["Source", "Mount Orrin, [[kestrel-mountains|Kestrel Mountains]]"], ["Source elevation", "2,640 m"], ["Mouth", "Gulf of Velin at [[port-velin|Port Velin]]"], ["Basin area", "9,800 km²"], ["Average discharge", "215 m³/s"], ["Tributaries", "Wend River"], ["Cities", "[[ashgrove|Ashgrove]], [[port-velin|Port Velin]]"]],
    sections: [
      ["Course", "From its source the Aster descends steeply past [[ashgrove|Ashgrove]], then turns east across the Tamsin Plain, where it is joined by the Wend River. It reaches the sea at [[port-velin|Port Velin]]."],
      ["Crossings", "The most famous crossing is the [[aster-bridge|Aster Bridge]] at Port Velin, opened in 1938."]
    ]
  },
  {
    id: "sorrel-river", title: "Sorrel River", cats: ["waters"],
    lead: "The <b>Sorrel River</b> is the second-longest river in [[caldria|Caldria]]. It flows out of [[lake-mirren|Lake Mirren]] at [[hollowmere|Hollowmere]] and runs south-west through [[drennick|Drennick]] to the Western Sea at [[lunmouth|Lunmouth]].",
    infobox: [["Length", "287 km"], ["Source", "[[lake-mirren|Lake Mirren]] at [[hollowmere|Hollowmere]]"], ["Mouth", "Western Sea at [[lunmouth|Lunmouth]]"], ["Basin area", "5,200 km²"], ["Average discharge", "96 m³/s"], ["Cities", "[[hollowmere|Hollowmere]], [[drennick|Drennick]], [[lunmouth|Lunmouth]]"]],
    sections: [
      ["Course", "The river leaves the lake at Hollowmere and flows through a wooded valley to [[drennick|Drennick]]. Below Drennick the valley widens and the river is navigable for barges as far as the sea."],
      ["History", "The Sorrel gave its name to the Sorrel kings, who ruled from [[drennick|Drennick]] until 1589."]
    ]
  },
  {
    id: "lake-mirren", title: "Lake Mirren", cats: ["waters"],
    lead: "<b>Lake Mirren</b> is the largest lake in [[caldria|Caldria]], lying south of the [[kestrel-mountains|Kestrel Mountains]]. Its only outflow is the [[sorrel-river|Sorrel River]].",
    infobox: [["Area", "318 km²"], ["Maximum depth", "164 m"], ["Length", "34 km"], ["Surface elevation", "219 m"], ["Inflow", "Orrin Beck and mountain streams"], ["Outflow", "[[sorrel-river|Sorrel River]]"], ["Shore cities", "[[hollowmere|Hollowmere]]"]],
    sections: [
      ["Geography", "The lake fills a glacial basin 34 km long. It is fed mainly by the Orrin Beck, which rises near Mount Orrin."],
      ["Economy", "The fine white sand of the lake's beaches has been used by the glassmakers of [[hollowmere|Hollowmere]] since the fifteenth century."]
    ]
  },
  {
    id: "kestrel-mountains", title: "Kestrel Mountains", cats: ["mountains"],
    lead: "The <b>Kestrel Mountains</b> are the main mountain range of [[caldria|Caldria]], running 240 km across the north of the island. The highest peak, Mount Orrin, is the highest point in the country.",
    infobox: [["Highest peak", "Mount Orrin"], ["Elevation", "3,104 m"], ["Length", "240 km"], ["Other peaks", "Mount Sella (2,877 m), Greywatch (2,530 m)"], ["Rivers", "[[aster-river|Aster River]], Orrin Beck"], ["Towns", "[[ashgrove|Ashgrove]]"], ["Resources", "Silver, copper"]],
    sections: [
      ["Peaks", "Mount Orrin (3,104 m) is the highest summit, followed by Mount Sella (2,877 m) and Greywatch (2,530 m). The [[aster-river|Aster River]] rises on the eastern slopes of Mount Orrin."],
      ["Mining", "Silver was discovered in the range in the early seventeenth century, leading [[isolde-ii|Queen Isolde II]] to found [[ashgrove|Ashgrove]] in 1655."]
    ]
  },
  {
    id: "ida-venholm", title: "Ida Venholm", cats: ["people", "engineers"],
    lead: "<b>Ida Venholm</b> (3 May 1791 – 19 November 1858) was a Caldrian mechanical engineer, best known as the inventor of the [[venholm-valve|Venholm valve]].",
    infobox: [["Born", "3 May 1791, [[drennick|Drennick]]"], ["Died", "19 November 1858, [[port-velin|Port Velin]]"], ["Education", "[[university-of-drennick|University of Drennick]]"], ["Occupation", "Mechanical engineer"], ["Known for", "[[venholm-valve|Venholm valve]] (1824)"]],
    sections: [
      ["Early life", "Venholm was born in [[drennick|Drennick]], the daughter of a millwright, and studied mathematics at the [[university-of-drennick|University of Drennick]]."],
      ["Career", "In 1824 she patented the [[venholm-valve|Venholm valve]], a pressure relief valve that made steam boilers far safer. From 1826 to 1850 she was chief engineer of the [[port-velin|Port Velin]] waterworks, the first installation to use her valve."]
    ]
  },
  {
    id: "tobias-quell", title: "Tobias Quell", cats: ["people", "engineers"],
    lead: "<b>Tobias Quell</b> (12 February 1822 – 4 August 1897) was a Caldrian glassmaker and optician who invented the [[quell-lens|Quell lens]] for lighthouses.",
    infobox: [["Born", "12 February 1822, [[hollowmere|Hollowmere]]"], ["Died", "4 August 1897, [[hollowmere|Hollowmere]]"], ["Occupation", "Glassmaker, optician"], ["Known for", "[[quell-lens|Quell lens]] (1861)"], ["Company", "Quell &amp; Sons Glassworks (founded 1849)"]],
    sections: [
      ["Life", "Quell was born in [[hollowmere|Hollowmere]] into a family of glass blowers. He founded Quell &amp; Sons Glassworks in 1849."],
      ["The lens", "In 1861 he designed a stepped lens that concentrated a lamp's light into a narrow beam. The first [[quell-lens|Quell lens]] was installed in the [[lunmouth-lighthouse|Lunmouth Lighthouse]] in 1863."]
    ]
  },
  {
    id: "marta-oskerin", title: "Marta Oskerin", cats: ["people", "engineers"],
    lead: "<b>Marta Oskerin</b> (27 September 1868 – 2 March 1941) was a Caldrian physicist and chemist who invented the [[oskerin-cell|Oskerin cell]], an early dry battery.",
    infobox: [["Born", "27 September 1868, [[port-velin|Port Velin]]"], ["Died", "2 March 1941, [[drennick|Drennick]]"], ["Education", "[[university-of-drennick|University of Drennick]]"], ["Occupation", "Physicist, chemist"], ["Known for", "[[oskerin-cell|Oskerin cell]] (1897)"], ["Awards", "Aurel Medal (1912)"]],
    sections: [
      ["Career", "Oskerin studied at the [[university-of-drennick|University of Drennick]] and in 1905 became the first woman to hold a professorship there. Her [[oskerin-cell|Oskerin cell]] of 1897 replaced liquid batteries in railway signal lamps."],
      ["Honours", "She received the Aurel Medal in 1912 for her work on electrochemistry."]
    ]
  },
  {
    id: "isolde-ii", title: "Isolde II", cats: ["people"],
    lead: "<b>Isolde II</b> (8 January 1619 – 30 June 1684) was Queen of [[caldria|Caldria]] from 1641 until her abdication in 1678. She is remembered for developing the country's mining industry and for founding [[ashgrove|Ashgrove]].",
    infobox: [["Reign", "1641 – 1678"], ["Predecessor", "Anselm III"], ["Successor", "Edric IV"], ["Born", "8 January 1619, [[port-velin|Port Velin]]"], ["Died", "30 June 1684, [[port-velin|Port Velin]]"], ["House", "Sorrel"]],
    sections: [
      ["Reign", "Isolde succeeded her father Anselm III in 1641. After silver was found in the [[kestrel-mountains|Kestrel Mountains]] she founded [[ashgrove|Ashgrove]] in 1655 and built the Kestrel Road to carry ore to [[port-velin|Port Velin]]."],
      ["Abdication", "She abdicated in 1678 in favour of her son, Edric IV, and died in Port Velin six years later."]
    ]
  },
  {
    id: "leopold-harsk", title: "Leopold Harsk", cats: ["people", "engineers"],
    lead: "<b>Leopold Harsk</b> (21 July 1815 – 11 April 1880) was a Caldrian civil engineer, chief engineer of the [[great-northern-railway|Great Northern Railway]].",
    infobox: [["Born", "21 July 1815, [[ashgrove|Ashgrove]]"], ["Died", "11 April 1880, [[hollowmere|Hollowmere]]"], ["Occupation", "Civil engineer"], ["Known for", "[[great-northern-railway|Great Northern Railway]], Harsk Viaduct"]],
    sections: [
      ["Career", "Born in the mining town of [[ashgrove|Ashgrove]], Harsk trained as a surveyor. He was appointed chief engineer of the [[great-northern-railway|Great Northern Railway]] in 1862 and completed the line in 1871. His best-known structure is the 380-metre Harsk Viaduct near [[hollowmere|Hollowmere]], finished in 1869."]
    ]
  },
  {
    id: "corwin-bale", title: "Corwin Bale", cats: ["people"],
    lead: "<b>Corwin Bale</b> (15 October 1889 – 23 January 1962) was a Caldrian architect and structural designer, known for the [[aster-bridge|Aster Bridge]] and the [[national-library-of-caldria|National Library of Caldria]].",
    infobox: [["Born", "15 October 1889, [[lunmouth|Lunmouth]]"], ["Died", "23 January 1962, [[port-velin|Port Velin]]"], ["Occupation", "Architect"], ["Notable works", "[[national-library-of-caldria|National Library of Caldria]] (1931), [[aster-bridge|Aster Bridge]] (1938), Lunmouth Maritime Museum (1952)"]],
    sections: [
      ["Life", "Bale was born in [[lunmouth|Lunmouth]], the son of a shipwright, and opened his practice in [[port-velin|Port Velin]] in 1919."],
      ["Works", "His first major commission was the [[national-library-of-caldria|National Library of Caldria]], opened in 1931. He then designed the [[aster-bridge|Aster Bridge]], opened in 1938. His last large building was the Lunmouth Maritime Museum (1952) in his home town."]
    ]
  },
  {
    id: "venholm-valve", title: "Venholm valve", cats: ["inventions"],
    lead: "The <b>Venholm valve</b> is a spring-loaded pressure relief valve for steam boilers, invented by [[ida-venholm|Ida Venholm]] in 1824.",
    infobox: [["Inventor", "[[ida-venholm|Ida Venholm]]"], ["Year", "1824"], ["Type", "Pressure relief valve"], ["First use", "[[port-velin|Port Velin]] waterworks (1826)"]],
    sections: [
      ["Design", "The valve uses a calibrated spring instead of a dead weight, so it cannot be tampered with by stokers and keeps working when the boiler moves."],
      ["Use", "After its first use in the Port Velin waterworks in 1826, the valve became standard on Caldrian boilers and was fitted to every locomotive of the [[great-northern-railway|Great Northern Railway]]."]
    ]
  },
  {
    id: "quell-lens", title: "Quell lens", cats: ["inventions"],
    lead: "The <b>Quell lens</b> is a stepped lighthouse lens invented by [[tobias-quell|Tobias Quell]] in 1861.",
    infobox: [["Inventor", "[[tobias-quell|Tobias Quell]]"], ["Year", "1861"], ["Type", "Stepped lighthouse lens"], ["First installed", "[[lunmouth-lighthouse|Lunmouth Lighthouse]] (1863)"], ["Manufacturer", "Quell &amp; Sons Glassworks, [[hollowmere|Hollowmere]]"], ["Visible range", "38 km"]],
    sections: [
      ["Design", "The lens is built from concentric glass rings, each a slice of a much thicker lens, so it is light and thin while concentrating the light of a single lamp into a beam visible for 38 km."],
      ["History", "The first lens was ground at the Quell &amp; Sons works in [[hollowmere|Hollowmere]] from [[lake-mirren|Lake Mirren]] sand and installed at the [[lunmouth-lighthouse|Lunmouth Lighthouse]] in 1863."]
    ]
  },
  {
    id: "oskerin-cell", title: "Oskerin cell", cats: ["inventions"],
    lead: "The <b>Oskerin cell</b> is a zinc–carbon dry cell battery invented by [[marta-oskerin|Marta Oskerin]] in 1897.",
    infobox: [["Inventor", "[[marta-oskerin|Marta Oskerin]]"], ["Year", "1897"], ["Type", "Dry cell battery"], ["Voltage", "1.5 V"], ["Mass production", "1903, Velin Electric Company"]],
    sections: [
      ["Design", "The cell replaced the liquid electrolyte of earlier batteries with a paste thickened with kelp extract, so it could be used in any position without spilling."],
      ["Use", "From 1905 Oskerin cells powered the signal lamps of the [[great-northern-railway|Great Northern Railway]]."]
    ]
  },
  {
    id: "aster-bridge", title: "Aster Bridge", cats: ["structures"],
    lead: "The <b>Aster Bridge</b> is a suspension bridge across the [[aster-river|Aster River]] in [[port-velin|Port Velin]]. Designed by [[corwin-bale|Corwin Bale]] and opened in 1938, it is the longest bridge in [[caldria|Caldria]].",
    infobox: [["Location", "[[port-velin|Port Velin]]"], ["Crosses", "[[aster-river|Aster River]]"], ["Type", "Suspension bridge"], ["Designer", "[[corwin-bale|Corwin Bale]]"], ["Construction", "1933 – 1938"], ["Opened", "14 June 1938"], ["Total length", "1,180 m"], ["Main span", "640 m"], ["Tower height", "96 m"], ["Carries", "Road and tram"]],
    sections: [
      ["History", "Until the bridge opened, ferries were the only way across the river mouth. Construction began in 1933 and the bridge opened on 14 June 1938."],
      ["Design", "The steel towers rise 96 m above the water and carry a main span of 640 m; the total length including approach viaducts is 1,180 m."]
    ]
  },
  {
    id: "great-northern-railway", title: "Great Northern Railway", cats: ["structures"],
    lead: "The <b>Great Northern Railway</b> is a railway line linking [[port-velin|Port Velin]] with [[ashgrove|Ashgrove]] via [[hollowmere|Hollowmere]]. Opened in 1871, it was the first main line in [[caldria|Caldria]].",
    infobox: [["Termini", "[[port-velin|Port Velin]] – [[ashgrove|Ashgrove]]"], ["Opened", "1871"], ["Length", "326 km"], ["Stations", "14"], ["Chief engineer", "[[leopold-harsk|Leopold Harsk]]"], ["Gauge", "1,435 mm"], ["Electrified", "1958"]],
    sections: [
      ["Construction", "Work began in 1863 under the chief engineer [[leopold-harsk|Leopold Harsk]]. The 380-metre Harsk Viaduct east of [[hollowmere|Hollowmere]] was finished in 1869, and the whole line opened in 1871."],
      ["Technology", "Every locomotive carried a [[venholm-valve|Venholm valve]], and from 1905 the signal lamps were powered by [[oskerin-cell|Oskerin cells]]. The line was electrified in 1958."]
    ]
  },
  {
    id: "university-of-drennick", title: "University of Drennick", cats: ["institutions"],
    lead: "The <b>University of Drennick</b> is a public university in [[drennick|Drennick]]. Founded in 1402, it is the oldest university in [[caldria|Caldria]].",
    infobox: [["Location", "[[drennick|Drennick]]"], ["Founded", "1402"], ["Type", "Public"], ["Students", "18,400"], ["Motto", "Lux per aquas"], ["Notable alumni", "[[ida-venholm|Ida Venholm]], [[marta-oskerin|Marta Oskerin]]"]],
    sections: [
      ["History", "The university was founded in 1402 under the patronage of the Sorrel kings. It admitted women students from 1806, and in 1905 [[marta-oskerin|Marta Oskerin]] became its first female professor."],
      ["Alumni", "Its alumni include the engineer [[ida-venholm|Ida Venholm]] and the physicist [[marta-oskerin|Marta Oskerin]]."]
    ]
  },
  {
    id: "national-library-of-caldria", title: "National Library of Caldria", cats: ["institutions", "structures"],
    lead: "The <b>National Library of Caldria</b> is the national library of [[caldria|Caldria]], in [[port-velin|Port Velin]]. Its building, designed by [[corwin-bale|Corwin Bale]], opened in 1931.",
    infobox: [["Location", "[[port-velin|Port Velin]]"], ["Opened", "1931"], ["Architect", "[[corwin-bale|Corwin Bale]]"], ["Collection", "6.2 million items"], ["Reading rooms", "9"]],
    sections: [
      ["Building", "Bale's building is arranged around a central domed reading room. It was his first major commission."],
      ["Collections", "The library holds 6.2 million items, including the original patent drawings of the [[venholm-valve|Venholm valve]]."]
    ]
  },
  {
    id: "lunmouth-lighthouse", title: "Lunmouth Lighthouse", cats: ["structures"],
    lead: "The <b>Lunmouth Lighthouse</b> stands at the entrance to the harbour of [[lunmouth|Lunmouth]]. Built in 1794, it was the first lighthouse fitted with a [[quell-lens|Quell lens]].",
    infobox: [["Location", "[[lunmouth|Lunmouth]]"], ["Built", "1794"], ["Height", "41 m"], ["Lens", "[[quell-lens|Quell lens]] (since 1863)"], ["Range", "38 km"], ["Automated", "1979"]],
    sections: [
      ["History", "The granite tower was completed in 1794. Its oil lamp was fitted with the first [[quell-lens|Quell lens]] in 1863, which increased its range to 38 km. The light was automated in 1979."]
    ]
  }
];
