/**
 * JavaScript evaluated inside every fresh QuickJS context. It is small on
 * purpose: it is parsed once per run. It holds the run's context object in the
 * guest, so expressions are compiled once per run into guest functions and
 * called without copying the context across the boundary.
 *
 * `HELPERS` is a function of `(host, note)` (the two host functions) that
 * returns an object of helpers the host calls by name (see session.ts).
 * Only JSON text crosses the boundary in either direction.
 *
 * Spec format (built by src/pipeline/templates.ts) for settings values:
 *   {k:'x',i}      exact template: the value of expression i
 *   {k:'t',p:[..]} interpolated text: strings and expression indexes
 *   {k:'o',n:[keys],v:[specs]} / {k:'a',v:[specs]} objects and arrays holding templates
 *   {k:'l',v} / {k:'l',j} a literal (j: JSON text parsed afresh for each use)
 */
export const HELPERS = `(function(host,note){
var J=JSON,O=Object,S=String,isArr=Array.isArray,def=O.defineProperty,keys=O.keys,F=Function,
AF=O.getPrototypeOf(async function(){}).constructor,
ctx={},scope=O.create(null),fns=[],specs=[],loops=[],cur,last,result,ended=false,G=globalThis;
scope.context=ctx;
function put(o,k,v){def(o,k,{value:v,writable:true,enumerable:true,configurable:true})}
function merge(v){if(v!==null&&typeof v==='object'&&!isArr(v)){var ks=keys(v);for(var i=0;i<ks.length;i++)put(ctx,ks[i],v[ks[i]])}}
function text(v){return v===undefined||v===null?'':typeof v==='object'?J.stringify(v):S(v)}
function ev(s){var k=s.k,i,o;
if(k==='x')return fns[s.i](ctx,scope);
if(k==='t'){o='';for(i=0;i<s.p.length;i++)o+=typeof s.p[i]==='number'?text(fns[s.p[i]](ctx,scope)):s.p[i];return o}
if(k==='o'){o={};for(i=0;i<s.n.length;i++)put(o,s.n[i],ev(s.v[i]));return o}
if(k==='a'){o=[];for(i=0;i<s.v.length;i++)o[i]=ev(s.v[i]);return o}
return s.j===undefined?s.v:J.parse(s.j)}
function done(v){merge(v);if(v!==undefined)last=v}
function bytes(t){var n=t.length,i,c;for(i=0;i<t.length;i++){c=t.charCodeAt(i);if(c>127)n+=c>2047&&(c<55296||c>57343)?2:1}return n}
function size(t,max){return t.length>max?max+1:t.length*3<=max?t.length:bytes(t)}
function out(v,max){if(v===undefined)return'';var t=J.stringify(v);if(t===undefined)return'';return size(t,max)>max?'!':t}
return{
init:function(t){merge(J.parse(t))},
put:function(k,t){put(ctx,k,J.parse(t))},
fn:function(src){fns.push(new F('$$c','$$s','with($$c)with($$s)return('+src+'\\n)'));return fns.length-1},
script:function(src){fns.push(new AF('settings','context','Client','currentItem','currentIndex',src));return fns.length-1},
custom:function(src){var f=new F('return('+src+'\\n)')();if(typeof f!=='function')throw new TypeError('The code of a custom function must evaluate to a function');fns.push(f);return fns.length-1},
spec:function(t){specs.push(J.parse(t));return specs.length-1},
test:function(i){return fns[i](ctx,scope)?1:0},
value:function(i,max){return out(fns[i](ctx,scope),max)},
prep:function(i){cur=ev(specs[i]);return'condition'in cur&&!cur.condition?0:1},
settings:function(max){return out(cur,max)},
set:function(){merge(cur);last=cur},
ret:function(){result=cur.value;ended=true},
message:function(){return text(cur.message)},
absorb:function(t){done(t===''?undefined:J.parse(t))},
call:function(i,isScript){var f=fns[i];return Promise.resolve(isScript?f(cur,ctx,G.Client,scope.currentItem,scope.currentIndex):f(cur,ctx)).then(done)},
loop:function(i){var v=fns[i](ctx,scope);if(v===undefined||v===null)return-1;if(!isArr(v))return-2;loops.push({a:v,i:scope.currentItem,x:scope.currentIndex,h:'currentItem'in scope});return v.length},
range:function(){loops.push({a:null,i:scope.currentItem,x:scope.currentIndex,h:'currentItem'in scope})},
at:function(k,v){var l=loops[loops.length-1];scope.currentIndex=k;scope.currentItem=l.a?l.a[k]:v},
end:function(){var l=loops.pop();if(l.h){scope.currentItem=l.i;scope.currentIndex=l.x}else{delete scope.currentItem;delete scope.currentIndex}},
ended:function(){return ended?1:0},
finish:function(max){return out(ended?result:last,max)},
describe:function(e){try{if(e instanceof Error)return J.stringify({n:S(e.name),m:S(e.message)});return J.stringify({n:'Error',m:text(e)})}catch(x){return'{"n":"Error","m":"(an error that cannot be described)"}'}}
}})`;

/**
 * Installed only when a pipeline runs user code (script nodes, custom functions):
 * the guest's `Client` and `console`, bridged to the host through `host(op, json)`.
 */
export const BRIDGE = `(function(host,note){
var J=JSON,O=Object,fr=O.freeze,sl=Array.prototype.slice;
function call(op,args){return host(op,J.stringify(args)).then(function(t){return t===undefined?undefined:J.parse(t)})}
function connect(id){var c={};['find','findOne','findById','insert','update','removeById','query','commit'].forEach(function(n){c[n]=function(){return call('dataSources.'+n,[id].concat(sl.call(arguments)))}});return fr(c)}
function say(level){return function(){var p=[];for(var i=0;i<arguments.length;i++){var a=arguments[i];try{p.push(typeof a==='string'?a:J.stringify(a))}catch(e){p.push(String(a))}}note(level,p.join(' '))}}
globalThis.Client=fr({DataSources:fr({connect:connect}),Notifications:fr({create:function(input){return call('notifications.create',[input])}})});
globalThis.console=fr({log:say('log'),info:say('info'),warn:say('warn'),error:say('error'),debug:say('debug')});
})`;
